//! Caltech-256 (Griffin, Holub, Perona 2007) on disk: the `256_ObjectCategories/NNN.name/`
//! folder layout, the class subsets of the OASIS papers (spec §6.2, \[J\] Appendix B) and the
//! "too small" image filter (spec §12.1 item 1).
//!
//! Layout rules (documented choices):
//!
//! * [`Caltech256::open`] accepts either the `256_ObjectCategories` folder itself or a folder
//!   containing it.
//! * A class folder is a directory named `<number>.<name>` with a decimal number and a
//!   non-empty name (`009.bear`, `257.clutter`). Other entries of the root (files such as
//!   `.DS_Store`, directories not following the pattern) are skipped and listed in
//!   [`Caltech256::skipped`]. Two folders with the same number are an error.
//! * Inside a class folder, the images are the regular files (or symlinks to them) whose
//!   extension is `jpg`, `jpeg` or `png` (any case), in file-name order; this matches the
//!   official `NNN_MMMM.jpg` files. Everything else (the stray `RENAME2` file in
//!   `198.spider`, the `greg` subfolder of `056.dog`, hidden files) is not an image: it is
//!   skipped (not recursed into) and listed in [`ClassImages::skipped`].
//! * Subset classes are ordered by folder number; class `c` of a feature set built from a
//!   subset is the subset's `c`-th folder in that order.

pub mod provider;
pub mod standin;

use crate::DataError;
use std::path::{Path, PathBuf};

/// \[J\] Appendix B, 10 classes, mapped to official folder names (spec §6.2).
pub const C10: [&str; 10] = [
    "009.bear",
    "187.skyscraper",
    "011.billiards",
    "249.yo-yo",
    "144.minotaur",
    "175.roulette-wheel",
    "095.hamburger",
    "127.laptop-101",
    "113.hummingbird",
    "014.blimp",
];

/// \[J\] Appendix B, 20 classes (the two missing commas of the paper restored).
pub const C20: [&str; 20] = [
    "251.airplanes-101",
    "137.mars",
    "104.homer-simpson",
    "110.hourglass",
    "241.waterfall",
    "102.helicopter-101",
    "146.mountain-bike",
    "201.starfish-101",
    "212.teapot",
    "167.pyramid",
    "171.refrigerator",
    "051.cowboy-hat",
    "084.giraffe",
    "120.joy-stick",
    "052.crab-101",
    "013.birdbath",
    "069.fighter-jet",
    "233.tuning-fork",
    "116.iguana",
    "056.dog",
];

/// \[J\] Appendix B, 50 classes (with the spec's name normalisations).
pub const C50: [&str; 50] = [
    "252.car-side-101",
    "225.tower-pisa",
    "103.hibiscus",
    "177.saturn",
    "140.menorah-101",
    "170.rainbow",
    "032.cartman",
    "036.chandelier-101",
    "003.backpack",
    "092.grapes",
    "127.laptop-101",
    "215.telephone-box",
    "012.binoculars",
    "102.helicopter-101",
    "156.paper-shredder",
    "062.eiffel-tower",
    "223.top-hat",
    "221.tomato",
    "201.starfish-101",
    "107.hot-air-balloon",
    "234.tweezer",
    "162.picnic-table",
    "065.elk",
    "121.kangaroo-101",
    "138.mattress",
    "220.toaster",
    "063.electric-guitar-101",
    "008.bathtub",
    "090.gorilla",
    "119.jesus-christ",
    "049.cormorant",
    "136.mandolin",
    "132.light-house",
    "026.cake",
    "229.tricycle",
    "197.speed-boat",
    "047.computer-mouse",
    "205.superman",
    "038.chimp",
    "165.pram",
    "078.fried-egg",
    "069.fighter-jet",
    "236.unicorn",
    "254.greyhound",
    "093.grasshopper",
    "089.goose",
    "116.iguana",
    "059.drinking-straw",
    "190.snake",
    "108.hot-dog",
];

/// The 249-class set: folders numbered 1..=250 except this one (`129.leopards-101`).
pub const C249_EXCLUDED: u32 = 129;

/// A class subset.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subset {
    C10,
    C20,
    C50,
    /// Folders 001..250 except 129.leopards-101.
    C249,
    /// An explicit list of folder names (e.g. for tests or other studies).
    Folders(Vec<String>),
}

impl Subset {
    /// `"c10"`, `"c20"`, `"c50"` or `"c249"`.
    pub fn from_name(name: &str) -> Result<Self, DataError> {
        Ok(match name {
            "c10" => Subset::C10,
            "c20" => Subset::C20,
            "c50" => Subset::C50,
            "c249" => Subset::C249,
            other => {
                return Err(DataError::Param(format!(
                    "unknown Caltech-256 subset `{other}` (expected c10, c20, c50 or c249)"
                )));
            }
        })
    }

    /// The subset's short name (`"custom"` for an explicit folder list).
    pub fn name(&self) -> &'static str {
        match self {
            Subset::C10 => "c10",
            Subset::C20 => "c20",
            Subset::C50 => "c50",
            Subset::C249 => "c249",
            Subset::Folders(_) => "custom",
        }
    }

    /// The folder names of a named subset given as a list (`None` for [`Subset::C249`],
    /// which is defined by folder numbers).
    pub fn folder_names(&self) -> Option<Vec<String>> {
        let list: &[&str] = match self {
            Subset::C10 => &C10,
            Subset::C20 => &C20,
            Subset::C50 => &C50,
            Subset::C249 => return None,
            Subset::Folders(f) => return Some(f.clone()),
        };
        Some(list.iter().map(|s| s.to_string()).collect())
    }
}

/// One class folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassDir {
    /// The folder number (`9` for `009.bear`).
    pub number: u32,
    /// The folder name (`009.bear`).
    pub folder: String,
    pub path: PathBuf,
}

impl ClassDir {
    /// The class name without its number (`bear`).
    pub fn name(&self) -> &str {
        self.folder.split_once('.').map_or("", |(_, n)| n)
    }
}

/// The images of one class folder.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClassImages {
    /// Image files, in file-name order.
    pub images: Vec<PathBuf>,
    /// Entries that are not images (non-image files, subfolders), in name order.
    pub skipped: Vec<PathBuf>,
}

/// Whether a file name has an image extension (`jpg`, `jpeg`, `png`, any case).
pub fn is_image_file_name(name: &str) -> bool {
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && ["jpg", "jpeg", "png"]
            .iter()
            .any(|e| ext.eq_ignore_ascii_case(e))
}

/// Parse `NNN.name` into its number.
fn folder_number(name: &str) -> Option<u32> {
    let (num, rest) = name.split_once('.')?;
    if num.is_empty() || rest.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    num.parse().ok()
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<(String, PathBuf, bool)>, DataError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| DataError::io(dir, e))? {
        let entry = entry.map_err(|e| DataError::io(dir, e))?;
        let path = entry.path();
        // Follow symlinks: a linked folder or image counts as what it points to.
        let is_dir = path.is_dir();
        out.push((
            entry.file_name().to_string_lossy().into_owned(),
            path,
            is_dir,
        ));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// A Caltech-256 copy on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caltech256 {
    /// The `256_ObjectCategories` folder.
    pub root: PathBuf,
    /// Class folders, by folder number.
    pub classes: Vec<ClassDir>,
    /// Root entries that are not class folders.
    pub skipped: Vec<PathBuf>,
}

impl Caltech256 {
    /// Scan the class folders under `root` (the `256_ObjectCategories` folder or its parent).
    pub fn open(root: &Path) -> Result<Self, DataError> {
        let nested = root.join("256_ObjectCategories");
        let dir = if nested.is_dir() {
            nested
        } else {
            root.to_path_buf()
        };
        let missing = || DataError::Missing {
            name: "caltech256".into(),
            dir: dir.clone(),
            tried: "class folders `NNN.name` (here or in a `256_ObjectCategories` subfolder)"
                .into(),
            hint: "Download 256_ObjectCategories.tar from the Caltech-256 page \
                   (https://data.caltech.edu/records/nyy15-4j048) and unpack it here."
                .into(),
        };
        if !dir.is_dir() {
            return Err(missing());
        }
        let mut classes: Vec<ClassDir> = Vec::new();
        let mut skipped = Vec::new();
        for (name, path, is_dir) in read_dir_sorted(&dir)? {
            match folder_number(&name) {
                Some(number) if is_dir => classes.push(ClassDir {
                    number,
                    folder: name,
                    path,
                }),
                _ => skipped.push(path),
            }
        }
        if classes.is_empty() {
            return Err(missing());
        }
        classes.sort_by(|a, b| (a.number, &a.folder).cmp(&(b.number, &b.folder)));
        if let Some(w) = classes.windows(2).find(|w| w[0].number == w[1].number) {
            return Err(DataError::Inconsistent {
                path: dir,
                message: format!(
                    "two class folders share number {}: {} and {}",
                    w[0].number, w[0].folder, w[1].folder
                ),
            });
        }
        Ok(Caltech256 {
            root: dir,
            classes,
            skipped,
        })
    }

    /// The index (into [`classes`](Self::classes)) of the folder named `folder`.
    pub fn class_index(&self, folder: &str) -> Option<usize> {
        self.classes.iter().position(|c| c.folder == folder)
    }

    /// The class indices of `subset`, by folder number. A subset folder that is absent is a
    /// [`DataError::Missing`] listing every absent folder (`NNN.*` for [`Subset::C249`],
    /// whose folders are defined by number).
    pub fn resolve(&self, subset: &Subset) -> Result<Vec<usize>, DataError> {
        let (mut found, missing): (Vec<usize>, Vec<String>) = match subset.folder_names() {
            Some(names) => {
                let mut sorted = names.clone();
                sorted.sort();
                if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                    return Err(DataError::Param(format!(
                        "subset lists folder {} twice",
                        w[0]
                    )));
                }
                if names.is_empty() {
                    return Err(DataError::Param("empty subset".into()));
                }
                let mut found = Vec::new();
                let mut missing = Vec::new();
                for n in names {
                    match self.class_index(&n) {
                        Some(i) => found.push(i),
                        None => missing.push(n),
                    }
                }
                (found, missing)
            }
            None => {
                let mut found = Vec::new();
                let mut missing = Vec::new();
                for number in (1..=250).filter(|&n| n != C249_EXCLUDED) {
                    match self.classes.iter().position(|c| c.number == number) {
                        Some(i) => found.push(i),
                        None => missing.push(format!("{number:03}.*")),
                    }
                }
                (found, missing)
            }
        };
        if !missing.is_empty() {
            return Err(DataError::Missing {
                name: format!("caltech256 subset {}", subset.name()),
                dir: self.root.clone(),
                tried: format!("the subset's folders; missing: {}", missing.join(", ")),
                hint: format!(
                    "{} of {} folders of the subset are absent: is this a complete \
                     256_ObjectCategories copy?",
                    missing.len(),
                    missing.len() + found.len()
                ),
            });
        }
        found.sort_by_key(|&i| self.classes[i].number);
        Ok(found)
    }

    /// The classes not in `classes` (indices), by folder number.
    pub fn complement(&self, classes: &[usize]) -> Vec<usize> {
        (0..self.classes.len())
            .filter(|i| !classes.contains(i))
            .collect()
    }

    /// The image files of class `class` (index into [`classes`](Self::classes)).
    pub fn images(&self, class: usize) -> Result<ClassImages, DataError> {
        let dir = &self.classes[class].path;
        let mut out = ClassImages::default();
        for (name, path, is_dir) in read_dir_sorted(dir)? {
            if !is_dir && is_image_file_name(&name) && path.is_file() {
                out.images.push(path);
            } else {
                out.skipped.push(path);
            }
        }
        Ok(out)
    }

    /// `path` relative to the root, with `/` separators (`009.bear/009_0001.jpg`).
    pub fn relative(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        rel.components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }
}

/// One listed image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageEntry {
    pub path: PathBuf,
    /// Path relative to the root (`009.bear/009_0001.jpg`).
    pub relative: String,
    /// Position of the image's class in the listing's `classes`.
    pub label: u32,
    pub width: u32,
    pub height: u32,
    /// File size in bytes.
    pub bytes: u64,
}

/// The images of some classes after the size filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// Class indices into [`Caltech256::classes`], by folder number.
    pub classes: Vec<usize>,
    /// Kept images, class by class, in file-name order.
    pub images: Vec<ImageEntry>,
    /// Images whose shorter side is below the threshold.
    pub too_small: Vec<ImageEntry>,
    /// Non-image entries of the class folders.
    pub skipped: Vec<PathBuf>,
}

impl Caltech256 {
    /// List the images of `classes` (indices, kept in the given order), reading each image's
    /// header to drop those with a side shorter than `min_side` pixels ("too small", spec
    /// §12.1 item 1: 64 = one block). An unreadable image header is an error naming the file.
    pub fn list(&self, classes: &[usize], min_side: u32) -> Result<Listing, DataError> {
        let mut out = Listing {
            classes: classes.to_vec(),
            images: Vec::new(),
            too_small: Vec::new(),
            skipped: Vec::new(),
        };
        for (label, &c) in classes.iter().enumerate() {
            let imgs = self.images(c)?;
            out.skipped.extend(imgs.skipped);
            for path in imgs.images {
                let (width, height) = crate::pipelines::images::image_dimensions(&path)?;
                let bytes = std::fs::metadata(&path)
                    .map_err(|e| DataError::io(&path, e))?
                    .len();
                let entry = ImageEntry {
                    relative: self.relative(&path),
                    path,
                    label: label as u32,
                    width,
                    height,
                    bytes,
                };
                if width.min(height) < min_side {
                    out.too_small.push(entry);
                } else {
                    out.images.push(entry);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsets_have_the_published_sizes_and_overlaps() {
        for (list, n) in [(&C10[..], 10), (&C20[..], 20), (&C50[..], 50)] {
            assert_eq!(list.len(), n);
            let mut s: Vec<&str> = list.to_vec();
            s.sort();
            s.dedup();
            assert_eq!(s.len(), n, "duplicates in a subset");
            assert!(
                list.iter()
                    .all(|f| folder_number(f).is_some_and(|k| k <= 257))
            );
        }
        fn inter(a: &[&'static str], b: &[&'static str]) -> Vec<&'static str> {
            let mut v: Vec<&str> = a.iter().filter(|x| b.contains(x)).copied().collect();
            v.sort();
            v
        }
        assert_eq!(inter(&C10, &C50), vec!["127.laptop-101"]);
        assert_eq!(
            inter(&C20, &C50),
            vec![
                "069.fighter-jet",
                "102.helicopter-101",
                "116.iguana",
                "201.starfish-101"
            ]
        );
        assert!(inter(&C10, &C20).is_empty());
        assert_eq!(Subset::from_name("c249").unwrap(), Subset::C249);
        assert!(Subset::from_name("c11").is_err());
    }

    #[test]
    fn image_names_and_folder_numbers() {
        assert!(is_image_file_name("009_0001.jpg"));
        assert!(is_image_file_name("A.JPEG"));
        assert!(is_image_file_name("x.Png"));
        assert!(!is_image_file_name("RENAME2"));
        assert!(!is_image_file_name(".jpg"));
        assert!(!is_image_file_name("notes.txt"));
        assert_eq!(folder_number("009.bear"), Some(9));
        assert_eq!(folder_number("257.clutter"), Some(257));
        assert_eq!(folder_number("greg"), None);
        assert_eq!(folder_number("12."), None);
        assert_eq!(folder_number("x1.a"), None);
    }

    fn mkdirs(root: &Path, names: &[String]) {
        for n in names {
            std::fs::create_dir_all(root.join(n)).unwrap();
        }
    }

    #[test]
    fn c249_resolves_by_number_and_missing_folders_are_listed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("256_ObjectCategories");
        let names: Vec<String> = (1..=257).map(|n| format!("{n:03}.class{n}")).collect();
        mkdirs(&root, &names);
        std::fs::write(root.join(".DS_Store"), b"x").unwrap();
        let c = Caltech256::open(tmp.path()).unwrap();
        assert_eq!(c.root, root);
        assert_eq!(c.classes.len(), 257);
        assert_eq!(c.skipped, vec![root.join(".DS_Store")]);
        let idx = c.resolve(&Subset::C249).unwrap();
        assert_eq!(idx.len(), 249);
        let numbers: Vec<u32> = idx.iter().map(|&i| c.classes[i].number).collect();
        assert!(!numbers.contains(&129) && !numbers.contains(&251));
        assert_eq!((numbers[0], numbers[248]), (1, 250));
        // The named subsets need the official names: every folder is reported missing.
        let e = c.resolve(&Subset::C10).unwrap_err().to_string();
        for f in C10 {
            assert!(e.contains(f), "{e}");
        }
        std::fs::remove_dir(root.join("017.class17")).unwrap();
        std::fs::remove_dir(root.join("250.class250")).unwrap();
        let c = Caltech256::open(&root).unwrap();
        let e = c.resolve(&Subset::C249).unwrap_err();
        assert!(matches!(e, DataError::Missing { .. }));
        let e = e.to_string();
        assert!(e.contains("missing: 017.*, 250.*"), "{e}");
        assert!(e.contains("2 of 249"), "{e}");
    }

    #[test]
    fn named_subset_resolves_in_folder_order_and_duplicates_are_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let names: Vec<String> = C10.iter().map(|s| s.to_string()).collect();
        mkdirs(tmp.path(), &names);
        mkdirs(tmp.path(), &["001.ak47".to_string()]);
        let c = Caltech256::open(tmp.path()).unwrap();
        let idx = c.resolve(&Subset::C10).unwrap();
        let folders: Vec<&str> = idx.iter().map(|&i| c.classes[i].folder.as_str()).collect();
        assert_eq!(folders[0], "009.bear");
        assert_eq!(folders[9], "249.yo-yo");
        assert_eq!(c.classes[idx[0]].name(), "bear");
        assert_eq!(c.complement(&idx), vec![c.class_index("001.ak47").unwrap()]);
        std::fs::create_dir(tmp.path().join("9.bear-again")).unwrap();
        assert!(matches!(
            Caltech256::open(tmp.path()),
            Err(DataError::Inconsistent { .. })
        ));
        let dup = Subset::Folders(vec!["009.bear".into(), "009.bear".into()]);
        assert!(matches!(c.resolve(&dup), Err(DataError::Param(_))));
        assert!(matches!(
            Caltech256::open(&tmp.path().join("absent")),
            Err(DataError::Missing { .. })
        ));
    }
}
