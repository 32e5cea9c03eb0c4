"""Behaviour every backend's persistent shell must show (run by test_contract_shell.py on every backend)."""

from __future__ import annotations

import re
import secrets
import time
from typing import Any

from mimo_core.tools.bash import BashConfig, BashTool


def keeps_state_like_a_terminal(env: Any) -> None:
    bash = BashTool(BashConfig(timeout=10))
    setup = (
        "mkdir -p deep/er && cd deep/er && export EXPORTED='a  b' && PLAIN=p && "
        'greet() { echo "hi $1"; } && set -o pipefail && shopt -s nullglob && declare -a ARR=(x y)'
    )
    assert bash.run({"command": setup}, env).output == "(no output)\n[exit code: 0]"
    out = bash.run(
        {
            "command": 'pwd; echo "$EXPORTED" $PLAIN ${ARR[1]}; greet you; '
            "set -o | grep -w pipefail; false | true; echo rc=$?; echo none*"
        },
        env,
    ).output
    lines = out.splitlines()
    assert lines[0].endswith("/deep/er")
    assert lines[1:3] == ["a  b p y", "hi you"]
    assert lines[3].split() == ["pipefail", "on"]
    assert lines[4:] == ["rc=1", "", "[exit code: 0]"]  # pipefail on; nullglob: no match expands to nothing
    assert bash.run({"command": "env | grep -c ^EXPORTED=; env | grep -c ^PLAIN="}, env).output.split()[:2] == [
        "1",
        "0",
    ]


def survives_a_timeout(env: Any) -> None:
    bash = BashTool(BashConfig(timeout=10))
    bash.run({"command": "export KEPT=1; cd /"}, env)
    # sleep lengths no other process on the machine uses: without a sandbox the probe reads every
    # process's /proc, and other tests (this one on another backend, too) run beside this one
    tag = str(secrets.randbelow(9 * 10**6) + 10**6)
    start = time.monotonic()
    timed = BashTool(BashConfig(timeout=1)).run(
        {
            "command": f"echo partial; sleep {tag}1 & setsid sleep {tag}2 & (while :; do sleep {tag}4; done) & "
            f"sleep {tag}3"
        },
        env,
    )  # the ( ) subshell never execs: it carries no marker, only the call's output file
    assert time.monotonic() - start < 8
    assert timed.output.startswith("partial\n") and "timed out after 1 seconds" in timed.output
    alive = f"cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -Eo 'sleep {tag}[1-4]' | wc -l"
    before = bash.run({"command": f"sleep {tag}1 & sleep 0.5; echo started; {alive}; kill $!; wait $!"}, env).output
    assert "started\n1\n" in before, before  # the probe does see a live sleep
    after = bash.run({"command": "echo $KEPT; pwd; " + alive}, env)
    # the shell kept its state and the whole tree is gone (bash may report the killed jobs in between)
    lines = [x for x in after.output.splitlines() if not re.search(r"Killed|Terminated", x)]
    assert lines == ["1", "/", "0", "[exit code: 0]"], after.output


def restarts_after_exit(env: Any) -> None:
    bash = BashTool(BashConfig(timeout=10))
    bash.run({"command": "mkdir -p gone_in && cd gone_in && X=1"}, env)
    res = bash.run({"command": "echo bye; exit 7"}, env)
    assert res.returncode == 7
    assert res.output.startswith("bye\n") and "[the shell exited with code 7; a new shell was started in" in res.output
    again = bash.run({"command": "pwd; echo x=$X"}, env)
    assert again.output.splitlines()[0].endswith("/gone_in") and "x=\n" in again.output
    assert bash.run({"command": "set -e; false; echo unreachable"}, env).returncode == 1
    assert bash.run({"command": "echo fine"}, env).output == "fine\n[exit code: 0]"


def handles_binary_and_huge_output(env: Any) -> None:
    bash = BashTool(BashConfig(timeout=30, max_output_chars=1000))
    binary = bash.run({"command": "printf 'a\\000b\\377c\\n'; head -c 5000 /dev/urandom > /dev/null"}, env)
    assert binary.output == "a\ufffdb\ufffdc\n[exit code: 0]"
    huge = bash.run({"command": "seq 1 3000000; echo done"}, env)
    assert huge.output.startswith("1\n2\n3\n") and huge.output.endswith("done\n[exit code: 0]")
    assert "characters elided" in huge.output
    assert bash.run({"command": "echo still"}, env).output == "still\n[exit code: 0]"


def hides_its_wrapper(env: Any) -> None:
    bash = BashTool(BashConfig(timeout=10))
    for _ in range(3):  # bash numbers lines after all input read so far: the model's own numbers come back
        bash.run({"command": "true"}, env)
    err = bash.run({"command": "echo ok\nif then fi"}, env).output
    assert "line 2" in err and "MIMO" not in err and "eval" not in err and "printf" not in err, err
    traced = bash.run({"command": "set -x; echo t; set +x"}, env).output
    assert "MIMO" not in traced and "printf" not in traced and "t\n" in traced
    assert bash.run({"command": "cat; echo read-nothing"}, env).output == "read-nothing\n[exit code: 0]"


def runs_long_commands(env: Any) -> None:
    """Commands past the in-line limit travel after the call's line: same state, output, line numbers."""
    bash = BashTool(BashConfig(timeout=30, max_output_chars=100000))
    lines = "".join(f"line {i} {'x' * 50}\n" for i in range(200))
    res = bash.run(
        {
            "command": f"mkdir -p long && cd long && cat > f.txt <<'EOF'\n{lines}EOF\n"
            "export LONG=1; wc -l < f.txt\nif then"
        },
        env,
    )
    assert res.output.startswith("200\n") and "line 204: syntax error" in res.output, res.output
    after = bash.run({"command": "pwd; echo $LONG; tail -n 1 f.txt"}, env).output.splitlines()
    assert after[0].endswith("/long") and after[1:3] == ["1", f"line 199 {'x' * 50}"], after
    assert env.execute(f"echo start; : '{'y' * 3000}'; echo end").output == "start\nend\n"


ALL = [
    keeps_state_like_a_terminal,
    runs_long_commands,
    survives_a_timeout,
    restarts_after_exit,
    handles_binary_and_huge_output,
    hides_its_wrapper,
]
