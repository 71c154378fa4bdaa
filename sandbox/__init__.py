"""The Postgres-backed enterprise sandbox: servers, schema, seed data, per-run databases, dumps, tools."""
