"""The remote layer: `adk-acp serve` (ACP over WebSocket and Streamable HTTP) and
`adk-acp connect` (a stdio bridge to a served agent).

`hub.SessionHub` holds the live sessions independently of connections; each
connection is its own client (`RemoteState` over its own `JsonRpcConnection`),
attached to the sessions it opens through a `channel.SessionChannel`.
"""
