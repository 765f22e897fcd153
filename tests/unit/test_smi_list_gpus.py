"""`nvidia-smi -L` (sitscheck.smi.list_gpus)."""

from __future__ import annotations

import pytest
from sitscheck.smi.list_gpus import parse_list_gpus
from sitscheck.smi.values import SmiErrorKind, SmiParseError

MIG_HOST = """\
GPU 0: NVIDIA H200 (UUID: GPU-cb3dfa52-e2f3-9ca4-a399-7d16041c3732)
  MIG 3g.71gb     Device  0: (UUID: MIG-0929581a-2be6-5dec-bf34-0954c6c529a6)
  MIG 3g.71gb     Device  1: (UUID: MIG-3adbed3a-d03d-549f-a016-ba1fd7359f23)
GPU 1: NVIDIA H200 (UUID: GPU-d8594bd4-0fc3-8595-e355-7c98138f3b95)
"""


def test_gpus_with_mig_devices() -> None:
    listed = parse_list_gpus(MIG_HOST)
    assert listed.errors == ()
    assert [(g.index, g.name) for g in listed.gpus] == [(0, "NVIDIA H200"), (1, "NVIDIA H200")]
    first, second = listed.gpus
    assert first.uuid == "GPU-cb3dfa52-e2f3-9ca4-a399-7d16041c3732"
    assert [(m.profile, m.index, m.uuid) for m in first.mig_devices] == [
        ("3g.71gb", 0, "MIG-0929581a-2be6-5dec-bf34-0954c6c529a6"),
        ("3g.71gb", 1, "MIG-3adbed3a-d03d-549f-a016-ba1fd7359f23"),
    ]
    assert [m.line for m in first.mig_devices] == [2, 3]
    assert second.mig_devices == ()
    assert second.line == 4


def test_old_mig_uuid_form_and_serial_number() -> None:
    listed = parse_list_gpus(
        "GPU 0: A100-SXM4-40GB (UUID: GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f)\n"
        "  MIG 3g.20gb Device 0: (UUID: MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/7/0)\n"
        "GPU 1: Tesla M2090 (S/N: 0320111113512)\n"
    )
    a100, m2090 = listed.gpus
    assert a100.mig_devices[0].uuid == "MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/7/0"
    assert (m2090.name, m2090.uuid, m2090.serial) == ("Tesla M2090", None, "0320111113512")


def test_name_with_parentheses_is_kept_whole() -> None:
    (gpu,) = parse_list_gpus("GPU 0: Quadro K2200 (Rev 2) (UUID: GPU-1)\n").gpus
    assert (gpu.name, gpu.uuid) == ("Quadro K2200 (Rev 2)", "GPU-1")
    (bare,) = parse_list_gpus("GPU 0: Some Board (Rev 2)\n").gpus
    assert (bare.name, bare.uuid) == ("Some Board (Rev 2)", None)


def test_lost_gpu_between_listed_ones_is_an_error_not_a_gpu() -> None:
    listed = parse_list_gpus(
        "GPU 0: NVIDIA GeForce RTX 3060 (UUID: GPU-aaaa)\n"
        "Unable to determine the device handle for GPU1: 0000:0A:00.0: GPU is lost.  "
        "Reboot the system to recover this GPU\n"
        "GPU 2: NVIDIA GeForce RTX 3090 (UUID: GPU-bbbb)\n"
    )
    assert [g.index for g in listed.gpus] == [0, 2]
    (lost,) = listed.lost
    assert (lost.gpu_index, lost.bus_id, lost.line) == (1, "0000:0A:00.0", 2)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("No devices were found\n", SmiErrorKind.NO_DEVICES),
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.\n\n",
            SmiErrorKind.NO_DRIVER,
        ),
        (
            "Failed to initialize NVML: Driver/library version mismatch\n"
            "NVML library version: 550.54\n",
            SmiErrorKind.VERSION_MISMATCH,
        ),
        (
            "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n",
            SmiErrorKind.DEVICE_HANDLE,
        ),
        ("-bash: nvidia-smi: command not found\n", SmiErrorKind.NOT_INSTALLED),
    ],
)
def test_error_outputs_are_typed_errors(text: str, kind: SmiErrorKind) -> None:
    listed = parse_list_gpus(text)
    assert listed.gpus == ()
    assert [e.kind for e in listed.errors] == [kind]


def test_windows_line_endings_and_pasted_prompt() -> None:
    listed = parse_list_gpus(
        "C:\\Users\\op>nvidia-smi -L\r\n"
        "GPU 0: NVIDIA GeForce RTX 2080 SUPER (UUID: GPU-df6e7a7c-7314-46f8-abc4-b88b36dcf3aa)\r\n"
    )
    (gpu,) = listed.gpus
    assert gpu.name == "NVIDIA GeForce RTX 2080 SUPER"
    assert gpu.uuid == "GPU-df6e7a7c-7314-46f8-abc4-b88b36dcf3aa"
    assert gpu.line == 2


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("", None),
        ("\n\n", None),
        ("GPU 0: A (UUID: GPU-1)\nGPU 0: A (UUID: GPU-1)\n", 2),
        ("  MIG 1g.10gb     Device  0: (UUID: MIG-1)\n", 1),
        ("GPU 0: A (UUID: GPU-1)\nsomething else\n", 2),
        ("GPU 0:\n", 1),
        ("==============NVSMI LOG==============\n", 1),
        # an output cut mid-line (a killed command, a truncated paste): no made-up name
        ("GPU 0: A (UUID: GPU-1)\nGPU 1: NVIDIA H200 (UUID: GPU-9f2", 2),
        ("GPU 0: Tesla M2090 (S/N: 03201", 1),
    ],
)
def test_refused(text: str, line: int | None) -> None:
    with pytest.raises(SmiParseError) as caught:
        parse_list_gpus(text)
    assert caught.value.line == line
