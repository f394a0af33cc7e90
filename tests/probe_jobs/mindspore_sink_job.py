"""A real MindSpore ``Model.train(..., dataset_sink_mode=True)`` on the CPU backend, for the
probe tests. A generator sleeps ``--sleep-ms`` per batch (4 samples), a one-layer network
trains on it.

``--mode cpu``: as a user would run it here. MindSpore's CPU backend has no device queue:
``Model._train`` logs "The CPU cannot support dataset sink mode currently" and runs the host
loop, whose iterator the probe times, so a measured wait is the right answer.

``--mode device``: makes ``Model._train`` believe the device target is Ascend (its module's
``context.get_context`` answers "Ascend" for ``device_target``; nothing else changes), so the
real ``Model._train_dataset_sink_process`` runs as on a device, until it needs the device
queue (``InitDataSetQueue``), which the CPU cannot give: it raises, the job catches it. What
the probe sees up to there is what it sees on a device; what a real device run does after
(steps through the device queue) is not run here.

Prints ``READY <pid>`` once training ran (cpu: after ``--warm`` steps) or failed as expected
(device), then stays until stdin closes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np
from stop_signal import stop_when_stdin_closes


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["cpu", "device"], required=True)
    ap.add_argument("--sleep-ms", type=float, default=50.0)
    ap.add_argument("--warm", type=int, default=3)
    args = ap.parse_args()

    import mindspore as ms
    import mindspore.dataset as msds
    import mindspore.train.model as model_module
    from mindspore import nn

    stop = stop_when_stdin_closes()

    class Batches:
        """Random access with a length: MindSpore sizes a dataset without one by running it."""

        def __len__(self) -> int:
            return 1_000_000

        def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
            time.sleep(args.sleep_ms / 1000)
            return np.ones((4, 8), np.float32), np.ones((4, 1), np.float32)

    ds = msds.GeneratorDataset(Batches(), ["x", "y"], shuffle=False)
    net = nn.Dense(8, 1)
    model = ms.train.Model(net, loss_fn=nn.MSELoss(),
                           optimizer=nn.SGD(net.trainable_params(), 0.01))

    class Ready(ms.train.Callback):  # type: ignore[misc]
        n = 0

        def on_train_step_end(self, run_context: Any) -> None:
            Ready.n += 1
            if Ready.n == args.warm:
                print(f"READY {os.getpid()}", flush=True)
            if stop.is_set():
                run_context.request_stop()

    if args.mode == "device":
        real = model_module.context.get_context

        def device_target_ascend(key: str) -> Any:
            return "Ascend" if key == "device_target" else real(key)

        model_module.context.get_context = device_target_ascend
        try:
            model.train(1, ds, dataset_sink_mode=True)
            said = "TRAINED (unexpected: a device queue on CPU)"
        except RuntimeError as exc:
            said = f"NO DEVICE QUEUE: {str(exc).strip().splitlines()[-1][:200]}"
        print(f"READY {os.getpid()}", flush=True)
        print(said, flush=True)
        stop.wait()
    else:
        model.train(1, ds, callbacks=[Ready()], dataset_sink_mode=True)
    print("DONE", flush=True)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
