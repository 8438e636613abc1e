"""CT physics: projections, dose formulas and noise scaling against hand computations."""
import numpy as np
import pytest

from rendering import ct_physics as ctp


def test_mu_from_hu_water_air_bone():
    mu = ctp.mu_from_hu(np.array([-1000.0, 0.0, 1000.0, -2000.0]))
    assert mu == pytest.approx([0.0, 0.0192, 0.0384, 0.0], abs=1e-6)


def test_ap_projection_of_water_cylinder_is_path_length_times_mu():
    # 200 mm long water slab along y (AP) in a 2 mm grid: p = 0.0192 * 200 = 3.84
    mu = np.zeros((3, 150, 20), np.float32)
    mu[:, 10:110, :] = 0.0192
    p = ctp.scout_projection(mu, (2.0, 2.0, 2.0), "ap")
    assert p.shape == (3, 20)
    assert p[1, 5] == pytest.approx(3.84, rel=1e-5)
    lat = ctp.scout_projection(mu, (2.0, 2.0, 2.0), "lateral")
    assert lat.shape == (3, 150)
    with pytest.raises(ValueError):
        ctp.scout_projection(mu, (2.0, 2.0, 2.0), "oblique")


def test_scout_noise_is_unbiased_and_seeded():
    p = np.full((50, 50), 4.0, np.float32)
    a = ctp.add_scout_noise(p, np.random.default_rng(1))
    b = ctp.add_scout_noise(p, np.random.default_rng(1))
    assert np.array_equal(a, b)
    assert abs(float(a.mean()) - 4.0) < 0.02
    # Poisson counting: SD of -log(N/I0) is 1/sqrt(I0 exp(-p)) (about 0.005 at p = 4 with the topogram's I0)
    assert float(a.std()) == pytest.approx(1.0 / np.sqrt(ctp.SCOUT_I0 * np.exp(-4.0)), rel=0.15)


def test_dose_formulas_match_hand_computation():
    # CTDIvol = 0.07 mGy/mAs * 120 mAs / pitch 1.0 = 8.4 mGy; DLP over 300 mm = 252 mGy.cm; chest k 0.014
    d = ctp.dose(120, 120, 1.0, 300, "chest")
    assert d.ctdi_vol_mgy == pytest.approx(8.4)
    assert d.dlp_mgycm == pytest.approx(252.0)
    assert d.effective_msv == pytest.approx(252.0 * 0.014, abs=1e-3)
    # (80/120)^2.5 scaling and pitch division
    assert ctp.ctdi_vol(80, 100, 0.5) == pytest.approx(0.07 * (80 / 120) ** 2.5 * 200)
    with pytest.raises(ValueError):
        ctp.ctdi_vol(120, 100, 0.0)


def test_noise_falls_with_sqrt_mas_and_rises_with_size():
    s1 = ctp.noise_sigma_hu(120, 100, 1.0, 300)
    assert s1 == pytest.approx(ctp.NOISE_REF_HU)
    assert ctp.noise_sigma_hu(120, 400, 1.0, 300) == pytest.approx(s1 / 2)
    assert ctp.noise_sigma_hu(120, 100, 1.0, 350) > s1


def test_water_equivalent_diameter_of_water_disc():
    # a 300 mm water disc: A_w = pi 150^2 -> D_w = 300
    n, s = 200, 2.0
    yy, xx = np.mgrid[:n, :n] * s - n * s / 2
    disc = ((xx ** 2 + yy ** 2) <= 150 ** 2).astype(np.float32) * ctp.MU_WATER_PER_MM
    mu = disc[None]
    dw = ctp.water_equivalent_diameter_mm(ctp.scout_projection(mu, (s, s, s), "ap"),
                                          ctp.scout_projection(mu, (s, s, s), "lateral"), (s, s, s))
    assert dw[0] == pytest.approx(300, rel=0.01)


def test_scan_duration():
    assert ctp.scan_duration_s(400, 1.0, 40, 0.5) == pytest.approx(5.0)


@pytest.mark.parametrize("shape,axes,size", [((3, 64, 80), (1, 2), (1, 2, 2)), ((97, 131), (0, 1), 2),
                                             ((1, 1), (0, 1), 2), ((4, 5, 6), (1, 2), (1, 2, 2))])
def test_box2_filter_gives_scipys_uniform_filter_bytes(shape, axes, size):
    from scipy.ndimage import uniform_filter

    from rendering.ct_physics import box2_filter

    x = (np.random.default_rng(sum(shape)).standard_normal(shape) * 300).astype(np.float32)
    assert box2_filter(x, axes).tobytes() == uniform_filter(x, size=size).tobytes()


def test_a_ct_episode_never_imports_scipy():
    """scipy.ndimage cost every CT console 28 MiB PSS for one box filter; the model runs without it."""
    import subprocess
    import sys

    code = """
import sys
from rendering.subjects import load_runtime
from tasks.card import load_card
from consoles.ct.model import CTModel
card = load_card("ccta_heart_coverage_isocenter")
m = CTModel(load_runtime("dev"), card.id, 0, dict(card.initial_state), dict(card.perturbations))
m.select_protocol("ccta"); m.load_protocol(); m.acquire_scout(); m.on_clock(0.0, 10.0)
m.acquire_monitor_reference(); m.confirm(); m.scan(); m.on_clock(10.0, 60.0)
assert m.series, "no series was acquired"
print(sorted(k for k in sys.modules if k.split(".")[0] == "scipy"))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=100)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "[]"
