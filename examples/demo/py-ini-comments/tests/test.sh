#!/bin/bash
# Verifier: copy the hidden tests into the repo, run them, write /logs/verifier/reward.json.
mkdir -p /logs/verifier
cp /tests/test_ini_hidden.py /app/test_ini_hidden.py
cd /app && python3 /tests/grade.py
