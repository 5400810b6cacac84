"""The adapter registry and the base every adapter class derives from: run-time registration, declared
settings (a mistyped --model-args key is an error), the family check and the remote-code gate."""

import subprocess
import sys

import pytest

from focus_eval.adapters import ADAPTERS, load_adapter, register
from focus_eval.adapters.base import PresetAdapter
from focus_eval.errors import FocusError
from focus_eval.presets import Preset, load_preset, parse_model_args


class ConstantAdapter(PresetAdapter):
    """An adapter defined outside the package: every image becomes the preset's ``value``."""

    families = ("vm",)
    settings_keys = frozenset({"value", "width"})

    def __init__(self, preset, device="cpu", trust_remote_code=False):
        super().__init__(preset, trust_remote_code)
        self.device = device

    def embed_images(self, pixels):
        return [[float(self.settings.get("value", 0))] * int(self.settings.get("width", 1)) for _ in pixels]


def _preset(**fields):
    base = dict(name="constant", family="vm", domain="general", adapter="test_constant", path="inline.yaml",
                settings={"value": 3, "width": 2})
    return Preset(**{**base, **fields})


@pytest.fixture
def registered():
    register("test_constant", ConstantAdapter)
    register("test_constant_lazy", f"{__name__}:ConstantAdapter")
    yield
    ADAPTERS.unregister("test_constant")
    ADAPTERS.unregister("test_constant_lazy")


def test_an_adapter_registered_at_run_time_loads_through_load_adapter(registered):
    adapter = load_adapter(_preset(), device="cpu")
    assert type(adapter) is ConstantAdapter and adapter.embed_images([0, 1]) == [[3.0, 3.0], [3.0, 3.0]]
    lazy = load_adapter(_preset(adapter="test_constant_lazy"))
    assert type(lazy) is ConstantAdapter and lazy.settings == {"value": 3, "width": 2}
    assert "test_constant" in ADAPTERS.names() and "hf_vision" in ADAPTERS.names()


def test_a_name_cannot_be_taken_twice_unless_replaced(registered):
    with pytest.raises(FocusError, match="already registered"):
        register("test_constant", "somewhere:Else")
    register("test_constant", f"{__name__}:ConstantAdapter", replace=True)
    assert type(load_adapter(_preset())) is ConstantAdapter


def test_unknown_adapter_names_get_a_close_name_hint():
    with pytest.raises(FocusError, match=r"preset 'constant': unknown adapter 'hf_visoin'; did you mean hf_vision"):
        load_adapter(_preset(adapter="hf_visoin"))


def test_an_undeclared_setting_is_an_error_naming_it_and_the_valid_ones(registered):
    with pytest.raises(FocusError) as err:
        load_adapter(_preset(settings={"valeu": 3}))
    message = str(err.value)
    assert "unknown setting valeu for adapter 'test_constant'; did you mean value?" in message
    assert message.endswith("Valid settings: value, width") and "inline.yaml" in message
    with pytest.raises(FocusError, match=r"unknown settings colour, valeu for adapter 'test_constant'"):
        load_adapter(_preset(settings={"valeu": 3, "colour": 1}))


def test_the_family_must_be_one_the_adapter_serves(registered):
    with pytest.raises(FocusError, match=r"serves families \['vm'\], not 'mllm'"):
        load_adapter(_preset(family="mllm"))


def test_remote_code_needs_the_users_consent(registered):
    with pytest.raises(FocusError, match="--trust-remote-code"):
        load_adapter(_preset(trust_remote_code=True))
    assert load_adapter(_preset(trust_remote_code=True), trust_remote_code=True).trust_remote_code is True
    # consent alone does not switch remote code on for a preset that does not need it
    assert load_adapter(_preset(), trust_remote_code=True).trust_remote_code is False


@pytest.mark.parametrize("name", ["tiny-vit", "tiny-clip", "retfound-mae-cfp"])
def test_a_mistyped_model_arg_fails_for_encoders_before_any_loading(name, tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUS_CACHE", str(tmp_path))
    preset = load_preset(name, parse_model_args("poolng=cls"))
    with pytest.raises(FocusError) as err:
        load_adapter(preset)
    message = str(err.value)
    assert "unknown setting poolng" in message and "check_processor" in message.split("Valid settings: ")[1]
    assert not (tmp_path / "tiny").exists()  # refused before the tiny model was built


def test_a_mistyped_preset_field_is_pointed_at():
    with pytest.raises(FocusError, match="did you mean revision"):
        load_adapter(load_preset("tiny-vit", {"revison": "main"}))


def test_every_shipped_adapter_derives_from_the_one_base():
    classes = {name: ADAPTERS.get(name) for name in ADAPTERS.names()}
    assert {"hf_mllm", "hf_vision", "hf_clip", "timm_vision", "open_clip", "retclip", "flair"} <= set(classes)
    for name, cls in classes.items():
        assert issubclass(cls, PresetAdapter) and cls.families and cls.settings_keys, name


def test_light_modules_import_no_model_code_and_import_in_any_order():
    # Each module is imported into a fresh set of focus_eval modules: an import cycle would fail one of them.
    modules = ["focus_eval", "focus_eval.digests", "focus_eval.presets", "focus_eval.adapters",
               "focus_eval.adapters.builtin", "focus_eval.adapters.lora", "focus_eval.adapters.checkpoints",
               "focus_eval.adapters.base", "focus_eval.tiny", "focus_eval.tiny.cache", "focus_eval.tiny.encoders",
               "focus_eval.tiny.mllm", "focus_eval.finetune.artifacts"]
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n"
            "    for loaded in [m for m in sys.modules if m.startswith('focus_eval')]:\n"
            "        del sys.modules[loaded]\n"
            "    importlib.import_module(name)\n"
            "print(sorted(m for m in ('torch', 'transformers', 'timm', 'open_clip', 'peft') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
