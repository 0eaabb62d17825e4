"""End-to-end tests: the real agent process driven over stdio by `acp_client.AcpTestClient`."""
