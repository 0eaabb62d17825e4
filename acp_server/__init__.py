"""adk-acp: the editor-facing face (ACP over stdio) of the agent engine in `runtime`."""

__version__ = "0.1.0"
