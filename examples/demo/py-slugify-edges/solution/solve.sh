#!/bin/bash
# Reference solution: apply the gold patch in the task's repository.
cd /app && git apply /solution/solution.patch
