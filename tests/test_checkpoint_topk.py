"""The top-k checkpoint files and their record, across a resume."""
from imf.train.checkpoint import TopK


def _touch(folder, *names):
    for name in names:
        (folder / name).write_bytes(b"ckpt")


def test_a_resume_adds_the_top_k_file_latest_pt_did_not_know_and_keeps_k(tmp_path):
    saved = [[0.5, 1, "epoch=0001-test_mean_score=0.500.pt"], [0.4, 3, "epoch=0003-test_mean_score=0.400.pt"]]
    _touch(tmp_path, *(name for _, _, name in saved))
    _touch(tmp_path, "epoch=0005-test_mean_score=0.450.pt")  # made after latest.pt of epoch 5
    _touch(tmp_path, "epoch=0009-test_mean_score=0.900.pt")  # beyond the resumed epoch: not ours
    _touch(tmp_path, "best.pt", "latest.pt")
    topk = TopK(tmp_path, k=2)
    topk.load_state_dict(saved, upto_epoch=5)
    assert topk.names() == ["epoch=0001-test_mean_score=0.500.pt", "epoch=0005-test_mean_score=0.450.pt"]
    assert not (tmp_path / "epoch=0003-test_mean_score=0.400.pt").exists()  # dropped beyond k
    assert (tmp_path / "best.pt").exists() and (tmp_path / "epoch=0009-test_mean_score=0.900.pt").exists()


def test_saved_entries_alone_load_unchanged(tmp_path):
    saved = [[0.7, 2, "epoch=0002-test_mean_score=0.700.pt"]]
    _touch(tmp_path, saved[0][2])
    topk = TopK(tmp_path, k=5)
    topk.load_state_dict(saved, upto_epoch=2)
    assert topk.state_dict() == saved
