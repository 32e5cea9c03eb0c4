import unittest

from textutil.slug import slugify


class TestSlug(unittest.TestCase):
    def test_basic(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_edges(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")
        self.assertEqual(slugify("  --Spaced out--  "), "spaced-out")

    def test_only_punctuation(self):
        self.assertEqual(slugify("!!!"), "")
