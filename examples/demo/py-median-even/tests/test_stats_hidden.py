import unittest

from stats import mean, median


class TestMedian(unittest.TestCase):
    def test_even(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)
        self.assertEqual(median([10, 20]), 15)

    def test_odd(self):
        self.assertEqual(median([3, 1, 2]), 2)

    def test_empty(self):
        with self.assertRaises(ValueError):
            median([])


class TestMean(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)
