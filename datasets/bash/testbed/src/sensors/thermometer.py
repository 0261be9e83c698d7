import random


class Thermometer:
    """Reads the temperature in degrees Celsius."""

    def __init__(self, station_id):
        self.station_id = station_id
        self.offset = 0.0

    def calibrate(self, offset):
        self.offset = offset

    def read(self):
        # TODO: replace the simulated value with the I2C driver
        return round(random.uniform(-5.0, 30.0) + self.offset, 1)
