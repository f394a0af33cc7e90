"""On the path of a benchmarked process (``bench_ui.py --nvml-peer``): ``pynvml`` becomes the
project's NVML stand-in (tests/fakes/pynvml.py) with 8 H200-like GPUs whose figures move every
second, so the dashboard and a peer such as nvitop read the same cards. Functions the stand-in
does not answer raise NVML's FunctionNotFound, as an old driver would. Needs the real
nvidia-ml-py installed (for its constants) and ``FAKE_NVML_REPO`` set to this checkout.
"""

import math
import os
import sys
import threading
import time

_ANSWERED = ("nvmlDevice", "nvmlSystem", "nvmlUnit", "nvmlVgpu", "nvmlGpm", "nvmlEvent",
             "nvmlGpuInstance", "nvmlComputeInstance", "nvmlGet", "nvmlSet")
repo = os.environ.get("FAKE_NVML_REPO")
if repo:
    import pynvml as _real  # the real binding: the stand-in takes its constants
    sys.path.insert(0, repo)
    from tests.fakes.pynvml import FakeGpu, FakeNvml
    gpus = [FakeGpu(uuid=f"GPU-{j:08d}-2222-3333-4444-555555555555",
                    bus_id=f"00000000:{0x18 + j:02X}:00.0") for j in range(8)]
    fake = FakeNvml(gpus)
    mod = fake.module()
    missing = []
    for name in dir(_real):
        if hasattr(mod, name):
            continue
        value = getattr(_real, name)
        if name.startswith(_ANSWERED) and callable(value):
            def absent(*args, _n=name, **kwargs):
                raise _real.NVMLError(_real.NVML_ERROR_FUNCTION_NOT_FOUND)
            setattr(mod, name, absent)
            missing.append(name)
        else:
            setattr(mod, name, value)
    mod.nvmlInitWithFlags = lambda flags=0: mod.nvmlInit()
    sys.modules["pynvml"] = mod
    def move():
        step = 0
        while True:
            for j, g in enumerate(gpus):
                g.util_pct = round(50 + 45 * math.sin(step / 5 + j))
                g.power_w = round(300 + 250 * math.sin(step / 7 + j))
                g.temp_c = 40 + j + step % 5
            step += 1
            time.sleep(1)
    threading.Thread(target=move, daemon=True).start()
