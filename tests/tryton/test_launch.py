"""What every Tryton process the environment starts is shielded from (launch.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# A library that judges every address unfit for mail, as email_validator does for the admin's reserved
# `.invalid` address (and, given a network, for any domain DNS says takes no mail). Another extra
# installed beside the tryton one brings the real library into the same interpreter (on CI it did).
FAKE_VALIDATOR = """
class EmailNotValidError(ValueError):
    pass

def caching_resolver(*args, **kwargs):
    return None

def validate_email(email, **kwargs):
    raise EmailNotValidError(f"{email} takes no mail")
"""


def test_an_email_library_in_the_interpreter_cannot_refuse_the_seeds_addresses(tmp_path: Path) -> None:
    (tmp_path / "email_validator.py").write_text(FAKE_VALIDATOR)
    (tmp_path / "dns").mkdir()
    (tmp_path / "dns" / "__init__.py").write_text("")
    (tmp_path / "dns" / "exception.py").write_text("class DNSException(Exception):\n    pass\n")
    config = tmp_path / "trytond.conf"
    config.write_text("[database]\nuri = postgresql://\n")
    probe = (
        "from agentrel.sandbox.environments.tryton import launch\n"
        f"launch._configure({str(config)!r})\n"
        "from trytond.tools.email_ import validate_email\n"
        "print(validate_email('admin@example.invalid'))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    # The planted library is importable: without launch's shield Tryton would use it and refuse.
    unshielded = "from trytond.tools.email_ import validate_email; validate_email('a@b.invalid')"
    planted = subprocess.run([sys.executable, "-c", unshielded], env=env, capture_output=True, text=True)
    assert planted.returncode != 0 and "takes no mail" in planted.stderr
    shielded = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert shielded.returncode == 0, shielded.stderr
    assert shielded.stdout.strip() == "admin@example.invalid"
