"""Define commands: catalog, synth, validate."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ecs_gpu import catalog as cat
from ecs_gpu.cli import app

console = Console(highlight=False)


@app.command("catalog")
def catalog_cmd() -> None:
    """List the GPU instance types ecs-gpu supports, with GPUs, memory and price.

    Example:

        ecs-gpu catalog
    """
    table = Table(
        title=f"ECS GPU instance types (on-demand {cat.PRICE_REGION}, prices of {cat.PRICE_DATE})"
    )
    for col in ("type", "GPUs", "GPU", "GPU MiB", "vCPU", "GiB", "USD/h"):
        table.add_column(col, justify="left" if col in ("type", "GPU") else "right")
    for t in cat.CATALOG.values():
        table.add_row(
            t.name,
            str(t.gpus),
            t.gpu_model,
            str(t.gpu_memory_mib),
            str(t.vcpus),
            f"{t.memory_gib:g}",
            f"{t.price_usd_per_hour:.4f}",
        )
    console.print(table)
    console.print(
        "Refused families: "
        + "; ".join(f"{fam}: {why}" for fam, why in cat.REFUSED_FAMILIES.items()),
        soft_wrap=True,
    )
