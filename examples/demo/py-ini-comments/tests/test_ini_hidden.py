import unittest

from miniini import parse


class TestIni(unittest.TestCase):
    def test_basic(self):
        self.assertEqual(parse("[a]\nx = 1\n# c\n"), {"a": {"x": "1"}})

    def test_semicolon_comments(self):
        self.assertEqual(parse("; top\n[a]\n;x = 2\ny = 3\n"), {"a": {"y": "3"}})

    def test_inline_comments(self):
        self.assertEqual(parse("[srv]\nport = 8080 ; default\nhost = h # main\n"),
                         {"srv": {"port": "8080", "host": "h"}})

    def test_hash_in_value(self):
        self.assertEqual(parse("[c]\ncolor=#fff\n"), {"c": {"color": "#fff"}})
