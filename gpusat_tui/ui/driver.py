"""Textual's Linux driver with an input thread that sleeps until there is input.

Textual's input thread wakes ten times a second whether or not a key came, to see whether the
app is quitting and whether a lone Escape has waited long enough to be a key. In a pane that
nobody types into that costs 1.3 ms of CPU a second (measured on an empty Textual app), 13 %
of the dashboard's whole budget of 10 ms/s. This thread blocks in ``select`` with no
timeout while nothing is pending, is woken by a pipe when Textual stops input, and keeps
Textual's 0.1 s tick only for a short while after each input, which covers the Escape delay.

What it costs: it re-implements `LinuxDriver.run_input_thread` (about thirty lines) on the
driver's documented attributes (``fileno``, ``exit_event``, ``process_message``) and Textual's
`XTermParser`; pyproject pins the Textual major it was written against, and
tests/ui/test_quiet_input.py drives keys, a lone Escape and quitting through a real tmux pane.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import time
from codecs import getincrementaldecoder

from textual import constants
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

#: Tick every this often while input may be mid-sequence (Textual's own interval).
TICK_S = 0.1


def ticking_window_s() -> float:
    """How long after the last input the thread keeps ticking: long enough for a pending
    Escape to time out (``ESCDELAY``, 100 ms by default) and be delivered, with margin."""
    return max(1.0, 3 * constants.ESCAPE_DELAY + TICK_S)


class QuietLinuxDriver(LinuxDriver):
    """`LinuxDriver` whose input thread costs nothing while no key is pressed."""

    _wake_read: int | None = None
    _wake_write: int | None = None

    def start_application_mode(self) -> None:
        # The pipe exists before Textual starts the input thread inside this call.
        self._close_wake_pipe()
        self._wake_read, self._wake_write = os.pipe()
        super().start_application_mode()  # type: ignore[no-untyped-call]  # unannotated in Textual

    def disable_input(self) -> None:
        """Wake the sleeping input thread, then let Textual stop and join it."""
        if self._wake_write is not None and not self.exit_event.is_set():
            with contextlib.suppress(OSError):
                os.write(self._wake_write, b"\0")
        super().disable_input()
        self._close_wake_pipe()

    def _close_wake_pipe(self) -> None:
        for fd in (self._wake_read, self._wake_write):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._wake_read = self._wake_write = None

    def run_input_thread(self) -> None:
        """Read the terminal and dispatch its events; sleep while there is nothing to do."""
        wake = self._wake_read
        if wake is None:  # started some other way: Textual's own loop
            super().run_input_thread()
            return
        fileno = self.fileno
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        window = ticking_window_s()
        last_input = time.monotonic()
        selector = selectors.SelectSelector()  # as Textual: works on every tty
        selector.register(fileno, selectors.EVENT_READ)
        selector.register(wake, selectors.EVENT_READ)
        try:
            while not self.exit_event.is_set():
                idle = time.monotonic() - last_input > window
                ready = {key.fd for key, _ in selector.select(None if idle else TICK_S)}
                if wake in ready:
                    # Textual sets the exit event just after waking us: wait for it rather
                    # than spin on the still-readable pipe.
                    self.exit_event.wait(1.0)
                    break
                if fileno in ready:
                    raw = os.read(fileno, 4096)
                    if not raw:  # end of input (a closed pipe): stop reading, do not spin
                        selector.unregister(fileno)
                        continue
                    last_input = time.monotonic()
                    data = decode(raw)
                    if data:  # empty while a UTF-8 character is split across reads
                        for event in parser.feed(data):
                            self.process_message(event)
                for event in parser.tick():
                    self.process_message(event)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, ParseError):  # as Textual: end of input mid-sequence
                pass
