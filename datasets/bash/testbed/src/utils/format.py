from datetime import datetime, timezone


def timestamp():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_row(station_id, values):
    # TODO: quote fields that contain commas
    return ",".join([timestamp(), station_id] + [str(v) for v in values])
