"""URL slugs."""
import re


def slugify(text):
    """Lower-case `text` and join its alphanumeric runs with single dashes."""
    text = text.lower().strip()
    return re.sub(r"[^a-z0-9]+", "-", text)
