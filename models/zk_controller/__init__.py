"""The ZooKeeper-era controller: election through /controller, fencing by /controller_epoch; the
model (model.py), its state types (state.py), its flags and presets (config.py), its drawing
(drawing.py) and its z3 encoding (symbolic.py)."""

from kmc.models.zk_controller.model import ZkControllerModel

__all__ = ["ZkControllerModel"]
