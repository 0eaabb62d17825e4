"""ACP v2 (preview), spoken beside v1 to a client that asks for it at `initialize`.

The agent's sessions, handlers and updates are v1's; a v2 connection (`dialect.V2Dialect`,
installed on its `JsonRpcConnection`) translates at the edge: its requests into the v1
handlers (`session/prompt` answered once the message is inserted, completion as an
`idle` state update), and every message the agent writes into v2's shapes
(`updates.V2Updates`: upserts with message ids, diffs as changes and a git patch,
plans by id, permission requests with a subject). One session may have v1 and v2
clients attached at once (`adk-acp serve`): each connection translates its own copy.
This package is ACP v2's vocabulary; nothing else writes v2 shapes.
"""
