"""Quality flags in the window (pytest-qt, offscreen, demo model set): badges in the takes list
with the flags in words, and "Reroll flagged takes" replacing a flagged take of a batch."""

from __future__ import annotations

from app.widgets.take_row_delegate import FLAGS_ROLE
from engines.finish.quality import describe_flag
from tests.app.test_gui import child, generate


def test_quality_badge_and_reroll_of_flagged_takes(qtbot):
    from app.common.gpu_service import make_generator
    from app.shell.main_window import MainWindow
    from app.shell.studio import Studio

    def flagging_generator():
        generator = make_generator()
        real = generator.generate

        def generate_flagged(request, *args, **kwargs):
            result = real(request, *args, **kwargs)
            if result.seed in (100, 101):
                result.quality = ["clipping"]
            return result

        generator.generate = generate_flagged
        return generator

    win = MainWindow()
    qtbot.addWidget(win)
    win.studio = Studio(win, make_generator=flagging_generator)
    messages = win.studio.notifier.history
    try:
        child(win, "autoplayCheck").setChecked(False)
        generate(qtbot, win, "gunshot", seconds=0.5, seed=99, variations=2)
        lst = child(win, "takesList")
        flagged = [lst.item(i) for i in range(2)
                   if win.studio.session.take_for(lst.item(i)).seed == 100]
        assert len(flagged) == 1 and flagged[0].data(FLAGS_ROLE) == ["clipping"]  # its badge
        assert describe_flag("clipping") in flagged[0].toolTip()
        assert not lst.item(0).data(FLAGS_ROLE)  # seed 99: no flags, no badge
        child(win, "rerollFlaggedCheck").setChecked(True)
        generate(qtbot, win, "gunshot", seconds=0.5, seed=100, variations=2)
        seeds = [win.studio.session.take_for(lst.item(i)).seed for i in (2, 3)]
        assert 100 not in seeds and 101 not in seeds
        assert any("seed 100 was flagged (clipping); trying seed" in m for m in messages)
        assert all(not lst.item(i).data(FLAGS_ROLE) for i in (2, 3))
    finally:
        win.studio.shutdown()
