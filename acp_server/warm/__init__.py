"""The warm per-user server (issue 23, route 2): a fresh `adk-acp` answers as a warm one.

A spawn of `adk-acp` (the editor's child) first asks, with the standard library only
(`client.py`), whether this user runs a ready server of this exact installation: a 0600
UNIX socket in a 0700 folder (`place.py`; its name is the installation's key: version,
interpreter and a hash of the installed files). If so it hands over its stdin, stdout,
stderr and working folder (SCM_RIGHTS), its argv and environment (`wire.py`), and the
server forks a child from its zygote (`server.py`: everything imported and one scripted
turn run, no thread or event loop alive) that becomes an ordinary stdio agent with that
spawn's environment, folder and flags (`child.py`). The client stays the editor's child:
it forwards signals and exits with the child's code; the child ends when the client
goes away. With no server the spawn serves cold, as before, and starts one detached for
the next spawns. Opt out with `--no-warm` or `ADK_ACP_NO_WARM=1`.

One process per spawn (a fork), not one process for all (the remote hub): credentials
and environments are never shared between spawns, and one child crashing takes no
other down.
"""
