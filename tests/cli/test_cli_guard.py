"""guard's own command line: what is an option of guard's and what is the command it runs."""

from __future__ import annotations

from click.testing import CliRunner

from driftscan.cli import main


def test_an_unknown_option_is_a_usage_error_not_a_command_to_run(tmp_path, monkeypatch):
    """click passes options it does not know on as the command's words; a typo in one of guard's
    options must stop guard (exit 2) before it audits, checkpoints or runs anything."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.delenv("DRIFTSCAN_CHECKPOINT_DIR", raising=False)
    ran = tmp_path / "ran"
    result = CliRunner().invoke(main, ["guard", "--venv", str(tmp_path), "--form", "json", "touch", str(ran)])
    assert result.exit_code == 2, result.output
    assert "no such option: --form" in result.output and "after --" in result.output
    assert not ran.exists() and not state.exists()


def test_the_command_after_double_dash_is_the_command(tmp_path):
    """After ``--`` a word that looks like an option is still refused: no program is named ``-x``."""
    result = CliRunner().invoke(main, ["guard", "--venv", str(tmp_path), "--", "--version"])
    assert result.exit_code == 2 and "no such option: --version" in result.output
