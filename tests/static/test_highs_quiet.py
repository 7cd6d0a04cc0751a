"""HiGHS prints a banner and a third-party notice when a process makes its first Highs;
memplace makes that one with stdout pointed at /dev/null, so no command shows them."""
from __future__ import annotations

import subprocess
import sys


def _stdout_of(code: str) -> str:
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "HiGHS" not in run.stderr
    return run.stdout


def test_highspy_itself_prints_its_banner_on_the_first_highs():
    """The behaviour silenced below (if HiGHS stops printing it, quiet_banner can go)."""
    assert "HiGHS" in _stdout_of("import highspy; highspy.Highs()")


def test_new_highs_prints_nothing_and_output_after_it_still_reaches_stdout():
    code = ("from memplace.solvers.highs import new_highs\n"
            "new_highs(1, 0, None)\nnew_highs(1, 0, 1.0)\nprint('after', flush=True)\n"
            "import highspy\nhighspy.Highs()\nprint('end')\n")
    assert _stdout_of(code) == "after\nend\n"


def test_the_pyomo_backend_prints_no_banner_either():
    code = ("from memplace.instances import load\nfrom memplace.solvers import solve\n"
            "r = solve(load('vgg16@nnpi'), 'milp', time_limit=20, backend='pyomo')\n"
            "print(r.status)\n")
    out = _stdout_of(code)
    assert "HiGHS" not in out and out.strip().splitlines()[-1] in ("optimal", "feasible")
