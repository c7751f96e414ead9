"""Loaded at interpreter start in every Python library image (PYTHONPATH=/splitbrain-lib).

Library candidates run under libfaketime with FAKETIME_DONT_FAKE_MONOTONIC=1, so clock faults
move the wall clock only. Debian bookworm's libfaketime 0.9.10 then fails
clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME), which CPython 3.11's time.sleep uses, with
EINVAL (faking the monotonic clock instead hangs every timed lock wait). time.sleep is
replaced by a select() wait on the real monotonic clock, which libfaketime leaves alone; it
changes no library's logic, only lets it sleep.
"""
import os
import select
import time

if "libfaketime" in os.environ.get("LD_PRELOAD", ""):
    _monotonic = time.monotonic

    def _sleep(secs):
        if secs < 0:
            raise ValueError("sleep length must be non-negative")
        deadline = _monotonic() + secs
        while True:
            left = deadline - _monotonic()
            if left <= 0:
                return
            select.select([], [], [], left)  # PEP 475: resumed after a signal handler returns

    _sleep.__doc__ = time.sleep.__doc__
    time.sleep = _sleep
