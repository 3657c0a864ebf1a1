"""Ctrl+C while a command's modules still load (a loaded machine: seen on the GPU machine with
12 test workers) is one sentence and exit 130, never a traceback."""

from __future__ import annotations

import builtins

import main


def test_ctrl_c_while_the_command_loads_is_one_sentence(monkeypatch, capsys):
    real_import = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name == "engines.cli.generate":
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    assert main.main(["generate", "--prompt", "coin"]) == 130
    err = capsys.readouterr().err
    assert err.startswith("cancelled: interrupted") and err.count("\n") == 1
    assert "Traceback" not in err
