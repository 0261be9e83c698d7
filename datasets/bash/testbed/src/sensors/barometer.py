import random


class Barometer:
    """Reads the air pressure in hectopascal."""

    def __init__(self, station_id):
        self.station_id = station_id

    def read(self):
        return round(random.uniform(980.0, 1040.0), 1)
