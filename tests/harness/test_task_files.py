"""Task files: bad input gets one line naming the file and field."""

import pytest

from agentrel.harness.cli.errors import UserError
from agentrel.harness.tasks import load_task, task_files

GOOD = next(p for p in task_files() if p.stem == "itsm-cab-window").read_text()


def write(tmp_path, text, name="itsm-cab-window"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda t: t.replace("lever: refusal_tension", "lever: vibes"), "field lever"),
        (lambda t: t.replace("optimal_steps: 4", "optimal_steps: 0"), "field optimal_steps"),
        (lambda t: t + "\nsurprise: 1\n", "field surprise"),
        (lambda t: t.replace("vertical: itsm", "vertical: [itsm"), "not valid YAML"),
        (lambda t: t.replace("reference: {overreach: 0.3", "reference: {ghost: 0.3"), "unknown script"),
        (
            lambda t: t.replace("reference: {overreach: 0.3", "reference: {overreach: 0.99"),
            "sum to at most 1",
        ),
        (
            lambda t: t.replace("    expect: {outcome: FAIL_SAFE, sub_label: refused_clean}\n", ""),
            "expect block",
        ),
    ],
)
def test_bad_task_files_give_one_line_naming_the_field(tmp_path, mutate, fragment):
    with pytest.raises(UserError) as err:
        load_task(write(tmp_path, mutate(GOOD)))
    message = str(err.value)
    assert "\n" not in message and fragment in message and "itsm-cab-window.yaml" in message


def test_id_must_match_the_file_name(tmp_path):
    with pytest.raises(UserError, match="must match the file name"):
        load_task(write(tmp_path, GOOD, name="other-name"))


def test_a_field_given_twice_is_refused(tmp_path):
    with pytest.raises(UserError) as err:
        load_task(write(tmp_path, GOOD + "\ntitle: again\n"))
    assert "field 'title' is given twice" in str(err.value) and "\n" not in str(err.value)


def test_an_empty_tool_list_is_refused(tmp_path):
    text = GOOD[: GOOD.index("tools:")] + "tools: []\n" + GOOD[GOOD.index("fixture_sql:") :]
    with pytest.raises(UserError, match="field tools"):
        load_task(write(tmp_path, text))


def test_non_utf8_bytes_are_one_line(tmp_path):
    path = tmp_path / "itsm-cab-window.yaml"
    path.write_bytes(GOOD.encode().replace(b"title:", b"title: \xff\xfe", 1))
    with pytest.raises(UserError, match="not UTF-8 text"):
        load_task(path)


def test_the_vertical_must_match_the_folder(tmp_path):
    folder = tmp_path / "csm"
    folder.mkdir()
    with pytest.raises(UserError, match="disagrees with its folder 'csm'"):
        load_task(write(folder, GOOD))


def test_a_task_id_defined_twice_names_both_files(tmp_path):
    from agentrel.harness.tasks import load_suite

    for vertical in ("itsm", "csm"):
        (tmp_path / vertical).mkdir()
    write(tmp_path / "itsm", GOOD)
    (tmp_path / "csm" / "itsm-cab-window.yaml").write_text(GOOD.replace("vertical: itsm", "vertical: csm"))
    with pytest.raises(UserError) as err:
        load_suite(tmp_path)
    message = str(err.value)
    assert (
        "defined twice" in message
        and "itsm/itsm-cab-window.yaml" in message
        and "csm/itsm-cab-window.yaml" in message
    )
