import os
import random


class Hygrometer:
    """Reads the relative humidity in percent."""

    def __init__(self, station_id):
        self.station_id = station_id
        self.device = os.environ.get("HYGRO_DEVICE", "/dev/i2c-1")

    def read(self):
        # FIXME: values above 100 have been seen on ST04
        return min(100, round(random.uniform(20.0, 100.0)))
