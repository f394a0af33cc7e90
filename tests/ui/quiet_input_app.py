"""A minimal Textual app for tests/ui/test_quiet_input.py, run in a real tmux pane.

``python quiet_input_app.py OUT quiet|stock [EXIT_AFTER_S]``: writes the input thread's native
id, then one line per key it receives, to OUT; q quits, and so does a timer after EXIT_AFTER_S
(an exit that no key wakes the input thread for). ``stock`` is Textual's own driver.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from textual.app import App, ComposeResult
from textual.drivers.linux_driver import LinuxDriver
from textual.events import Key
from textual.widgets import Static

from gpusat_tui.ui.driver import QuietLinuxDriver

OUT = Path(sys.argv[1])


def recording(base: type[LinuxDriver]) -> type[LinuxDriver]:
    class Recording(base):  # type: ignore[misc, valid-type]
        def run_input_thread(self) -> None:
            with OUT.open("a") as out:
                out.write(f"tid {threading.get_native_id()}\n")
            super().run_input_thread()

    return Recording


class KeysApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("ready")

    def on_mount(self) -> None:
        if len(sys.argv) > 3:
            self.set_timer(float(sys.argv[3]), self.exit)

    def on_key(self, event: Key) -> None:
        with OUT.open("a") as out:
            out.write(f"key {event.key}\n")
        if event.key == "q":
            self.exit()


if __name__ == "__main__":
    driver = QuietLinuxDriver if sys.argv[2] == "quiet" else LinuxDriver
    KeysApp(driver_class=recording(driver)).run()
