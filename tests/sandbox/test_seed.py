import re
from collections import Counter

from agentrel.sandbox.environments.enterprise.seed import generate


def test_same_seed_and_scale_give_the_same_digest_and_others_differ():
    a, b = generate("agentrel", 1), generate("agentrel", 1)
    assert a.digest() == b.digest()
    assert generate("other", 1).digest() != a.digest()


def test_default_size_is_about_twenty_thousand_rows_and_scale_multiplies_it():
    one = generate().row_count()
    assert 18_000 <= one <= 32_000
    assert generate(scale=2).row_count() > 1.8 * one


def test_data_is_realistic_and_internally_consistent():
    state = generate()
    incidents = [state.tables["incidents"].as_dict(k) for k in state.tables["incidents"].rows]
    assert all(re.fullmatch(r"INC\d{7}", i["number"]) for i in incidents)
    states = Counter(i["state"] for i in incidents)
    assert states["closed"] > 0 and states["new"] > 0 and states["in_progress"] > 0
    # Resolved incidents carry a resolution time, open ones do not.
    assert all((i["resolved_at"] is None) == (i["state"] not in ("resolved", "closed")) for i in incidents)
    users = state.tables["users"].rows
    assert all((i["caller_id"],) in users for i in incidents)
    # Money is canonical decimal text with two places.
    assert all(
        re.fullmatch(r"\d+\.\d\d", state.tables["invoices"].as_dict(k)["amount"])
        for k in state.tables["invoices"].rows
    )


def test_near_duplicate_names_exist_for_entity_confusion():
    state = generate()
    names = [state.tables["accounts"].as_dict(k)["name"] for k in state.tables["accounts"].rows]
    prefixes = Counter(" ".join(n.split()[:2]) for n in names)
    assert sum(1 for n in names if prefixes[" ".join(n.split()[:2])] > 1) >= 10
