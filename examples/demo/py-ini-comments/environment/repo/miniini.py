"""A minimal INI parser: `[section]` headers and `key = value` lines."""


def parse(text):
    data, section = {}, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            data.setdefault(section, {})
            continue
        if "=" not in line:
            raise ValueError(f"not a key = value line: {raw!r}")
        key, value = line.split("=", 1)
        data.setdefault(section, {})[key.strip()] = value.strip()
    return data
