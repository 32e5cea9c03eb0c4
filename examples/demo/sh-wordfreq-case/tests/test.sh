#!/bin/bash
# Verifier (DeepSWE style): apply the collected model patch itself, then check the script.
mkdir -p /logs/verifier
cd /app
if [ -s /logs/artifacts/model.patch ] && ! git apply /logs/artifacts/model.patch; then
    echo '{"reward": 0, "apply_failed": true}' > /logs/verifier/reward.json
    exit 0
fi
pass=0; total=0
check() {  # check NAME EXPECTED ACTUAL
    total=$((total + 1))
    if [ "$2" = "$3" ]; then pass=$((pass + 1)); echo "PASS $1"; else echo "FAIL $1: got [$3]"; fi
}
printf 'The the THE cat Cat dog\n' > /tmp/wf_in.txt
check mixed_case "$(printf '3 the\n2 cat\n1 dog')" "$(bash /app/wordfreq.sh /tmp/wf_in.txt)"
printf 'b a b a c\n' > /tmp/wf_in2.txt
check ties "$(printf '2 a\n2 b')" "$(bash /app/wordfreq.sh /tmp/wf_in2.txt 2)"
reward=0; [ "$pass" -eq "$total" ] && reward=1
printf '{"reward": %s, "f2p_total": 1, "f2p_passed": %s, "p2p_total": 1, "p2p_passed": %s, "apply_failed": false}\n' \
    "$reward" "$([ "$reward" = 1 ] && echo 1 || echo 0)" "$([ "$pass" -ge 1 ] && echo 1 || echo 0)" \
    > /logs/verifier/reward.json
