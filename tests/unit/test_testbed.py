from testbed.xvfb import Display


def test_private_display_has_a_window_manager(display: Display) -> None:
    import subprocess

    out = subprocess.run(["xdpyinfo"], env=display.env, capture_output=True, text=True, check=True).stdout
    assert "1920x1080 pixels" in out
    assert "XTEST" in out and "MIT-SHM" in out
