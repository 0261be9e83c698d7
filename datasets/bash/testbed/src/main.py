#!/usr/bin/env python3
"""Skylark collector: polls every sensor and appends readings to the monthly CSV."""
import os
import sys
import time

from sensors.thermometer import Thermometer
from sensors.barometer import Barometer
from sensors.hygrometer import Hygrometer
from utils.format import format_row

DATA_DIR = os.environ.get("SKYLARK_DATA", "data")


def poll(station_id):
    sensors = [Thermometer(station_id), Barometer(station_id), Hygrometer(station_id)]
    return [sensor.read() for sensor in sensors]


def main(argv):
    station_id = argv[1] if len(argv) > 1 else "ST01"
    # TODO: read the polling interval from configs/app.json
    while True:
        row = format_row(station_id, poll(station_id))
        print(row)
        time.sleep(60)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
