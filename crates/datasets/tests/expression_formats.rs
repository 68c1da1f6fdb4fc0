//! Robustness of the expression readers: randomly damaged copies of valid files (bytes flipped,
//! separators and quotes inserted, lines cut) give a value or a typed error, never a panic; and
//! an undamaged file still reads after the loop (the damage is what fails).

use dyad_datasets::DataError;
use dyad_datasets::allen::{self, ProbeCollapse};
use dyad_datasets::formats::gct::{ClsNumbering, read_cls, read_gct, read_res};
use dyad_datasets::prostate::kentridge::{KentRidgeOptions, read_kentridge};
use rand::Rng as _;
use std::path::Path;

const KENT: &str = "1,2.5,-3,Tumor\n4,5,6e1,Normal\n7,8,9,Tumor\n";
const GCT: &str = "#1.2\n2\t2\nName\tDescription\tA\tB\ng1\tone\t1\t2\ng2\ttwo\t3\t4\n";
const RES: &str =
    "Description\tAccession\tA\t\tB\t\n\tda\t\tdb\n2\nd1\tg1\t1\tP\t2\tA\nd2\tg2\t3\tM\t4\tP\n";
const CLS: &str = "3 2 1\n# Tumor Normal\n0 1 0\n";
const PROBES: &str = "\"probe_id\",\"probe_name\",\"gene_id\",\"gene_symbol\",\"gene_name\",\"entrez_id\",\"chromosome\"\n\
    11,\"P1\",1,\"G1\",\"gene one, long\",101,1\n12,\"P2\",1,\"G1\",\"gene one, long\",101,1\n13,\"P3\",2,\"G2\",\"gene two\",102,X\n";
const SAMPLES: &str = "structure_id,slab_num,well_id,slab_type,structure_acronym,structure_name,polygon_id,mri_voxel_x,mri_voxel_y,mri_voxel_z,mni_x,mni_y,mni_z\n\
    1,2,3,CX,A,\"a, left\",4,5,6,7,1.5,2.5,3.5\n9,8,7,CX,B,b,6,5,4,3,-1,-2,-3\n";
const EXPR: &str = "11,1,2\n12,3,4\n13,5,6\n";

fn mutate(text: &str, rng: &mut dyad_core::Rng) -> Vec<u8> {
    let mut b = text.as_bytes().to_vec();
    for _ in 0..rng.random_range(1..4) {
        if b.is_empty() {
            break;
        }
        let i = rng.random_range(0..b.len());
        match rng.random_range(0..6) {
            0 => b[i] = rng.random(),
            1 => {
                let special = b",\t\"\n \r#-.e";
                b.insert(i, special[rng.random_range(0..special.len())]);
            }
            2 => {
                b.remove(i);
            }
            3 => b.truncate(i),
            4 => b.insert(i, b'9'),
            _ => {
                let j = rng.random_range(0..b.len());
                b.swap(i, j);
            }
        }
    }
    b
}

#[test]
fn damaged_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    let mut rng = dyad_core::seeded(2024);
    let mut errors = 0;
    let mut total = 0;
    type Reader = fn(&Path) -> Result<(), DataError>;
    let readers: [(&str, Reader); 4] = [
        (KENT, |p| {
            read_kentridge(p, &KentRidgeOptions::default()).map(|_| ())
        }),
        (GCT, |p| read_gct(p).map(|_| ())),
        (RES, |p| read_res(p).map(|_| ())),
        (CLS, |p| {
            read_cls(p, ClsNumbering::ByFirstAppearance).map(|_| ())
        }),
    ];
    for (text, read) in readers {
        std::fs::write(&p, text).unwrap();
        read(&p).unwrap();
        for _ in 0..250 {
            std::fs::write(&p, mutate(text, &mut rng)).unwrap();
            total += 1;
            if read(&p).is_err() {
                errors += 1;
            }
        }
    }
    // Allen: damage one of the three files at a time.
    let donor = dir.path().join("donor");
    std::fs::create_dir_all(&donor).unwrap();
    let files = [
        (allen::PROBES_FILE, PROBES),
        (allen::SAMPLES_FILE, SAMPLES),
        (allen::EXPRESSION_FILE, EXPR),
    ];
    for (name, text) in files {
        std::fs::write(donor.join(name), text).unwrap();
    }
    let good = allen::read_donor(&donor, ProbeCollapse::MeanByGeneSymbol).unwrap();
    assert_eq!(good.data.values(), &ndarray::array![[2.0, 3.0], [5.0, 6.0]]);
    for (name, text) in files {
        for _ in 0..200 {
            std::fs::write(donor.join(name), mutate(text, &mut rng)).unwrap();
            total += 1;
            if allen::read_donor(&donor, ProbeCollapse::None).is_err() {
                errors += 1;
            }
        }
        std::fs::write(donor.join(name), text).unwrap();
    }
    // Most damage is detected (some mutations, e.g. a digit changed, are still valid files).
    assert!(
        errors * 2 > total,
        "{errors} errors in {total} damaged files"
    );
}
