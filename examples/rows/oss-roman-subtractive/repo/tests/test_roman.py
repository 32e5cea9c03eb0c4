import unittest

from roman import to_roman


class TestRoman(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(to_roman(3), "III")
        self.assertEqual(to_roman(2013), "MMXIII")

    def test_range(self):
        with self.assertRaises(ValueError):
            to_roman(0)
