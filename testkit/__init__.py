"""Support shared by the tests and the benchmarks: a scripted LLM endpoint, a private Docker engine,
headless Chromium, host packages installed on demand, and tiny tasks/configs that point at the scripted
endpoint. Never imports pytest, so `bench/` can use it outside a test run."""
