"""Everything that talks to AWS: sessions, error mapping, facts, deploy, verify."""
