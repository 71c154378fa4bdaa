"""`agentrel-enterprise`: AgentRel's own ITSM/CSM sandbox as an environment (env.py), a sibling of the τ²
ports and Tryton: its tables (`schema/`), its seed generator (`seed/`) and its tools (`tools/`); its suite
is the repository's tasks/ and damage_specs/ (sandbox/defaults.py says where an install finds them)."""
