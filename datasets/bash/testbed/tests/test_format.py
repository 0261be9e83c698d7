import unittest

from utils.format import format_row


class FormatTest(unittest.TestCase):
    def test_row_has_station(self):
        row = format_row("ST01", [21.4, 1012.0, 55])
        self.assertIn(",ST01,21.4,1012.0,55", row)


if __name__ == "__main__":
    unittest.main()
