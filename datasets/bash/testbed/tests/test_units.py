import unittest

from utils.units import celsius_to_fahrenheit, fahrenheit_to_celsius


class UnitsTest(unittest.TestCase):
    def test_freezing_point(self):
        self.assertEqual(celsius_to_fahrenheit(0), 32)

    def test_round_trip(self):
        self.assertAlmostEqual(fahrenheit_to_celsius(celsius_to_fahrenheit(21.5)), 21.5)


if __name__ == "__main__":
    unittest.main()
