import sqlalchemy as sa

from agentrel.sandbox.environments.enterprise.schema import ddl, metadata, table_infos


def test_schema_is_an_enterprise_of_at_least_30_tables_with_real_foreign_keys():
    infos = table_infos()
    assert len(infos) >= 30
    fks = [fk for t in metadata.sorted_tables for fk in t.foreign_keys]
    assert len(fks) >= 40
    assert "REFERENCES" in ddl()


def test_money_columns_are_numeric_12_2():
    money = {
        (t.name, c.name)
        for t in metadata.sorted_tables
        for c in t.columns
        if isinstance(c.type, sa.Numeric) and not isinstance(c.type, sa.Integer)
    }
    for expected in [
        ("configuration_items", "cost"),
        ("contracts", "annual_value"),
        ("products", "list_price"),
        ("refunds", "amount"),
        ("credits", "amount"),
        ("invoices", "amount"),
    ]:
        assert expected in money
    for t, c in money:
        col = metadata.tables[t].c[c]
        assert (col.type.precision, col.type.scale) == (12, 2), (t, c)


def test_composite_primary_keys_and_volatile_columns_are_declared():
    infos = table_infos()
    composite = {n for n, i in infos.items() if len(i.primary_key) > 1}
    assert {"group_members", "user_roles"} <= composite
    assert infos["incidents"].volatile == {"updated_at", "sys_mod_count"}
    assert not infos["group_members"].volatile
    assert infos["invoices"].kind("amount") == "numeric"
    assert infos["incidents"].kind("opened_at") == "timestamp"
