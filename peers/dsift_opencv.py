"""OpenCV's SIFT descriptors at given keypoints: the independent check of dyad's dense SIFT
(FuncISH §2.2; crates/datasets/tests/dsift_opencv.rs runs it).

    python peers/dsift_opencv.py IMAGE KEYPOINTS OUT --height H --width W --size S [--sigma SIGMA]

IMAGE      raw uint8 grayscale pixels, H x W, row-major (OpenCV's SIFT takes 8-bit images only)
KEYPOINTS  raw little-endian float32 pairs (x, y): keypoint centres in pixels, x right, y down
OUT        written: raw little-endian float32, one row of 128 values per keypoint, in order:
           `cv2.SIFT.compute` at the given keypoints with angle 0, size S and octave 0

OpenCV's descriptor of a keypoint of size S uses spatial bins of 3 * S / 2 pixels (its
SIFT_DESCR_SCL_FCTR = 3 times the scale S / 2), a Gaussian window of sigma = 2 bins around the
centre rounded to the nearest pixel, trilinear interpolation, the 0.2 clamp, and a final scaling
to 512 rounded to integers in [0, 255]. Before that it smooths the image to the pyramid's base
blur: by sqrt(max(sigma^2 - 0.5^2, 0.01)); `--sigma 0.5` (the default here) makes that a
Gaussian of sigma 0.1, i.e. the identity, so the descriptors are computed on the image itself.
"""

import argparse
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("image")
    ap.add_argument("keypoints")
    ap.add_argument("out")
    ap.add_argument("--height", type=int, required=True)
    ap.add_argument("--width", type=int, required=True)
    ap.add_argument("--size", type=float, required=True)
    ap.add_argument("--sigma", type=float, default=0.5)
    a = ap.parse_args(argv)

    import cv2

    cv2.setNumThreads(1)
    img = np.fromfile(a.image, dtype=np.uint8)
    if img.size != a.height * a.width:
        sys.exit(f"{a.image}: {img.size} bytes, expected {a.height} x {a.width}")
    img = img.reshape(a.height, a.width)
    xy = np.fromfile(a.keypoints, dtype="<f4")
    if xy.size % 2:
        sys.exit(f"{a.keypoints}: an odd number of float32 values")
    xy = xy.reshape(-1, 2)
    kps = [cv2.KeyPoint(float(x), float(y), a.size, 0.0, 0.0, 0) for x, y in xy]
    sift = cv2.SIFT_create(sigma=a.sigma)
    out_kps, desc = sift.compute(img, kps)
    if desc is None or len(out_kps) != len(kps) or desc.shape != (len(kps), 128):
        sys.exit(f"OpenCV returned {0 if desc is None else desc.shape} for {len(kps)} keypoints")
    for k, p in zip(kps, out_kps):
        if k.pt != p.pt:
            sys.exit(f"OpenCV moved a keypoint: {k.pt} -> {p.pt}")
    desc.astype("<f4").tofile(a.out)
    print(f"opencv {cv2.__version__}: {len(kps)} descriptors", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
