"""`nvidia-smi -q` → GPU records in snapshot shape: one sample per GPU, values read by label.

Every reading the GPU checks judge that `-q` prints is taken (identity, VBIOS, persistence
mode, recovery action, PCIe generation and width current/max and replays, power draw and
limits, clocks and their maxima, clock event reasons, utilization, temperatures and their
thresholds, ECC mode and counts, row remapper, retired pages). A value that is not a reading
(``N/A``, ``[N/A]``, ``Not Supported``, an error, a lost GPU) is no number: its key gets the
state the printed value means (see `records.reading`). What one reading cannot tell (growth or
rate of a counter over a window: PCIe replays, clock-event time, NVLink errors) gets the state
`one_reading`, so it is not judged, never healthy.

`-q` prints no nvidia-smi index: GPUs are numbered in printed order, which is the index order
when every attached GPU is shown (a GPU's `Minor Number` is its /dev/nvidiaN, not its index).
With ``-i`` a `-q` shows some of the `Attached GPUs`: the fleet says so, and its numbers are
no indices (`indexed=False`: joined to the other evidence by bus id and UUID only).

Temperature thresholds: drivers before 550 print them absolute (``GPU Slowdown Temp : 89 C``),
read as they are. 550+ on Hopper print them only relative to T.Limit (``GPU Slowdown T.Limit
Temp : -2 C``), beside the current margin (``GPU T.Limit Temp : 24 C``). No absolute threshold
is derived from those: the margin is not measured on the sensor ``GPU Current Temp`` reads
(the recorded 4xH200 under load: current + margin gives 81-87 C for one fixed T.Limit of 87 C;
idle, both agree), so the state is `relative_only` and the rules fall back to the profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..smi.query_q import SmiGpu, parse_query_q
from ..smi.values import SmiError, SmiParseError, Value, ValueKind
from ..sources.nvml_record import normalise_bus_id
from .calls import SMI_Q
from .records import is_lost_line, lost_record, new_record, put, reading
from .view import GpuFleet, GpuView

# -q's clock event reason labels -> nvmlClocksEventReason* bits (nvml.h).
REASON_LABELS: Mapping[str, int] = {
    "idle": 0x1,
    "applications clocks setting": 0x2,
    "sw power cap": 0x4,
    "hw slowdown": 0x8,
    "sync boost": 0x10,
    "sw thermal slowdown": 0x20,
    "hw thermal slowdown": 0x40,
    "hw power brake slowdown": 0x80,
    "display clock setting": 0x100,
}
# Keys a single reading cannot judge: they need a counter read at both ends of a window.
ONE_READING_KEYS = ("violations", "nvlink.errors")
# (record path, unavailable key, -q label path) of plain numbers and flags.
_NUMBERS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("clocks_max_mhz", "sm"), "clocks_max.sm", "Max Clocks/SM"),
    (("clocks_max_mhz", "mem"), "clocks_max.mem", "Max Clocks/Memory"),
)
_FLAG_PATHS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("remap", "pending"), "remap"),
    (("remap", "failure"), "remap"),
    (("retired_pages", "pending"), "retired_pages.pending"),
)
# Recovery words -q prints under "GPU Reset Status" (550+ before "GPU Recovery Action").
_RESET_STATUS = (
    ("GPU Reset Status/Drain and Reset Recommended", "drain_and_reset"),
    ("GPU Reset Status/Reset Required", "reset"),
)


def from_query_q(text: str, ref: str) -> GpuFleet:
    """The GPU records of one `-q` output; a text that is not `-q` output gives no GPUs and
    the parser's reason (file and line) as the fleet's problem."""
    try:
        query = parse_query_q(text)
    except SmiParseError as exc:
        return GpuFleet((), SMI_Q, ref, (f"{ref}: {exc}",), indexed=False)
    problems: list[str] = []
    printed: list[tuple[int, SmiGpu | SmiError]] = [(g.line, g) for g in query.gpus]
    for error in query.errors:
        if is_lost_line(error):
            printed.append((error.line, error))
        else:
            problems.append(f"{ref}:{error.line}: {error.message}")
    gpus: list[GpuView] = []
    for position, (_, item) in enumerate(sorted(printed, key=lambda p: p[0])):
        if isinstance(item, SmiError):
            index = item.gpu_index if item.gpu_index is not None else position
            detail = f"{ref}:{item.line}: {item.message}"
            gpus.append(GpuView(index, lost_record(index, item, detail), SMI_Q, ref))
        else:
            gpus.append(GpuView(position, _record(position, item), SMI_Q, ref))
    shown = len(gpus)
    if query.attached_gpus is not None and shown < query.attached_gpus:
        problems.append(
            f"{ref}: shows {shown} of the {query.attached_gpus} attached GPUs (nvidia-smi -q -i): "
            "the others are not in this output"
        )
    complete = query.attached_gpus is None or shown >= query.attached_gpus
    return GpuFleet(
        tuple(gpus),
        SMI_Q,
        ref,
        tuple(problems),
        indexed=complete,
        driver_version=query.driver_version,
        cuda_driver_version=cuda_version_number(query.cuda_version),
        attached=query.attached_gpus,
        complete=complete,
    )


def cuda_version_number(text: str | None) -> int | None:
    """``"13.0"`` → 13000, ``"12.4"`` → 12040: NVML's cudaDriverVersion encoding."""
    if not text:
        return None
    major, _, minor = text.strip().partition(".")
    if not major.isdigit() or (minor and not minor.isdigit()):
        return None
    return int(major) * 1000 + int(minor or 0) * 10


def _record(index: int, gpu: SmiGpu) -> dict[str, Any]:
    record = new_record(index)
    bus = gpu.get("PCI/Bus Id").as_text() or gpu.bus_id
    record["pci_bus_id"] = normalise_bus_id(bus)
    for key, text in (
        ("name", gpu.product_name),
        ("uuid", gpu.uuid),
        ("serial", gpu.serial),
        ("vbios", gpu.vbios_version),
        ("inforom_image", gpu.get("Inforom Version/Image Version").as_text()),
    ):
        if text:
            record[key] = text
    device_id = gpu.get("PCI/Device Id")
    if device_id.kind is ValueKind.HEX and isinstance(device_id.number, int):
        record["pci_device_id"] = f"{device_id.number:08x}"
    put(record, ("persistence_mode",), "persistence_mode", gpu.persistence_mode,
        "-q Persistence Mode", flag=True)  # fmt: skip
    _recovery(gpu, record)
    _pcie(gpu, record)
    _power(gpu, record)
    for path, key, label in _NUMBERS:
        put(record, path, key, gpu.get(label), f"-q {label}")
    _thresholds(gpu, record)
    _memory(gpu, record)
    record["samples"].append(_sample(gpu, record))
    for key in ONE_READING_KEYS:
        record["unavailable"].setdefault(key, "one_reading")
    record["unavailable"].setdefault("nvlink", "not_queried")
    record["unavailable"].setdefault("gpm", "not_queried")
    return record


def _recovery(gpu: SmiGpu, record: dict[str, Any]) -> None:
    action = gpu.get("GPU Recovery Action").as_text()
    if action:
        record["recovery_action"] = "_".join(action.lower().split())
        return
    for label, name in _RESET_STATUS:
        try:
            flag = gpu.get(label).as_bool()
        except SmiParseError:
            continue
        if flag:
            record["recovery_action"] = name
            return
        if flag is False:
            record.setdefault("recovery_action", "none")


def _pcie(gpu: SmiGpu, record: dict[str, Any]) -> None:
    link = gpu.pcie
    for name, value, label in (
        ("gen_current", link.gen_current, "PCIe Generation/Current"),
        ("gen_max", link.gen_max, "PCIe Generation/Max"),
        ("gen_device_max", link.gen_device_max, "PCIe Generation/Device Max"),
        ("width_current", link.width_current, "Link Width/Current"),
        ("width_max", link.width_max, "Link Width/Max"),
    ):
        put(record, ("pcie", name), f"pcie.{name}", value, f"-q PCI/GPU Link Info/{label}")
    put(record, ("pcie", "replay_counter_start"), "pcie.replay", link.replays_since_reset,
        "-q PCI/Replays Since Reset")  # fmt: skip


def _power(gpu: SmiGpu, record: dict[str, Any]) -> None:
    power = gpu.power
    put(record, ("power", "enforced_limit_w"), "power.limit", power.enforced_limit,
        "-q GPU Power Readings/Current Power Limit")  # fmt: skip
    put(record, ("power", "default_limit_w"), "power.default_limit", power.default_limit,
        "-q GPU Power Readings/Default Power Limit")  # fmt: skip


def _thresholds(gpu: SmiGpu, record: dict[str, Any]) -> None:
    t = gpu.temperature
    for name, absolute, relative, label in (
        ("shutdown_c", t.gpu_shutdown, t.gpu_shutdown_tlimit, "GPU Shutdown Temp"),
        ("slowdown_c", t.gpu_slowdown, t.gpu_slowdown_tlimit, "GPU Slowdown Temp"),
        ("gpu_max_c", t.gpu_max_operating, t.gpu_max_operating_tlimit, "GPU Max Operating Temp"),
        ("mem_max_c", t.memory_max_operating, t.memory_max_operating_tlimit,
         "Memory Max Operating Temp"),
    ):  # fmt: skip
        key = f"temperature.{name}"
        if absolute.kind is ValueKind.ABSENT and relative.kind is not ValueKind.ABSENT:
            record.setdefault("temperature", {})[name] = None
            record["unavailable"].setdefault(key, "relative_only")
            continue
        put(record, ("temperature", name), key, absolute, f"-q Temperature/{label}")


def _number(value: Value) -> float | None:
    try:
        return value.as_float()
    except SmiParseError:
        return None


def _memory(gpu: SmiGpu, record: dict[str, Any]) -> None:
    ecc = gpu.ecc
    put(record, ("ecc", "mode_enabled"), "ecc.mode", ecc.mode_current, "-q ECC Mode/Current",
        flag=True)  # fmt: skip
    for scope_name, scope in (("volatile", ecc.volatile), ("aggregate", ecc.aggregate)):
        for kind, value in (
            ("corrected", scope.correctable_total),
            ("uncorrected", scope.uncorrectable_total),
        ):
            label = f"-q ECC Errors/{scope_name.title()}"
            put(record, ("ecc", scope_name, kind), f"ecc.{scope_name}.{kind}", value, label)
    rows = gpu.remapped_rows
    for name, value in (
        ("corrected", rows.correctable),
        ("uncorrected", rows.uncorrectable),
    ):
        put(record, ("remap", name), "remap", value, "-q Remapped Rows")
    for name, value in (("pending", rows.pending), ("failure", rows.failure)):
        put(record, ("remap", name), "remap", value, "-q Remapped Rows", flag=True)
    for name, value in (
        ("max", rows.histogram_max),
        ("high", rows.histogram_high),
        ("partial", rows.histogram_partial),
        ("low", rows.histogram_low),
        ("none", rows.histogram_none),
    ):
        put(record, ("remap", "histogram", name), "remap.histogram", value,
            "-q Remapped Rows/Bank Remap Availability Histogram")  # fmt: skip
    put(record, ("retired_pages", "sbe"), "retired_pages", ecc.retired_single_bit,
        "-q Retired Pages/Single Bit ECC")  # fmt: skip
    put(record, ("retired_pages", "dbe"), "retired_pages", ecc.retired_double_bit,
        "-q Retired Pages/Double Bit ECC")  # fmt: skip
    put(record, ("retired_pages", "pending"), "retired_pages.pending", ecc.retired_pending,
        "-q Retired Pages/Pending", flag=True)  # fmt: skip


def _sample(gpu: SmiGpu, record: dict[str, Any]) -> dict[str, Any]:
    t, power, link = gpu.temperature, gpu.power, gpu.pcie
    sample: dict[str, Any] = {"t": 0.0}
    for name, key, value, label in (
        ("util_gpu", "utilization", gpu.get("Utilization/Gpu"), "Utilization/Gpu"),
        ("util_mem", "utilization", gpu.get("Utilization/Memory"), "Utilization/Memory"),
        ("power_w", "power.draw", power.draw, "GPU Power Readings/Power Draw"),
        ("sm_clock_mhz", "clocks.sm", gpu.get("Clocks/SM"), "Clocks/SM"),
        ("mem_clock_mhz", "clocks.mem", gpu.get("Clocks/Memory"), "Clocks/Memory"),
        ("temp_c", "temperature.gpu", t.gpu_current, "Temperature/GPU Current Temp"),
        ("mem_temp_c", "temperature.memory", t.memory_current, "Temperature/Memory Current Temp"),
        ("pcie_tx_kbps", "pcie.tx", link.tx_throughput, "PCI/Tx Throughput"),
        ("pcie_rx_kbps", "pcie.rx", link.rx_throughput, "PCI/Rx Throughput"),
    ):
        sample[name] = reading(record, key, value, f"-q {label}")
    sample["clock_event_reasons"] = _reasons(gpu, record)
    return sample


def _reasons(gpu: SmiGpu, record: dict[str, Any]) -> int | None:
    """The reasons printed Active/Not Active as NVML's bitmask; None (noted) when the section
    is absent or any known reason is not a yes/no."""
    known = {
        REASON_LABELS[key]: value
        for label, value in gpu.clocks_event_reasons.items()
        if (key := " ".join(label.lower().split())) in REASON_LABELS
    }
    if not known:
        value = gpu.get("Clocks Event Reasons")
        reading(record, "clock_event_reasons", value, "-q Clocks Event Reasons")
        record["unavailable"].setdefault("clock_event_reasons", "not_queried")
        return None
    mask = 0
    for bit, value in known.items():
        flag = reading(record, "clock_event_reasons", value, "-q Clocks Event Reasons",
                       flag=True)  # fmt: skip
        if flag is None:
            return None
        if flag:
            mask |= bit
    return mask
