use super::*;

fn c_g9(x: f64) -> String {
    let mut buf = [0u8; 64];
    // SAFETY: the buffer is large enough for any %.9g output and NUL-terminated by snprintf.
    let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%.9g".as_ptr(), x) };
    String::from_utf8(buf[..n as usize].to_vec()).unwrap()
}

#[test]
fn g9_matches_c_printf() {
    let mut xs = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.1,
        1e-4,
        1e-5,
        9.99999999e-5,
        123456789.0,
        1234567890.0,
        1e9,
        999999999.5,
        5e-324,
        f64::MAX,
        0.000123456789,
        1.5e-7,
    ];
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20000 {
        s = crate::hashing::splitmix64(s);
        let x = f32::from_bits((s >> 32) as u32);
        if x.is_finite() {
            xs.push(f64::from(x));
        }
    }
    for x in xs {
        assert_eq!(format_g9(x), c_g9(x), "{x:e}");
    }
}

#[test]
fn npy_headers_are_numpys() {
    // np.lib.format's version 1.0 headers of these shapes (64-byte aligned).
    let h = npy_header("<f4", &[34, 24], None);
    assert_eq!(h.len(), 128);
    assert_eq!(&h[..10], b"\x93NUMPY\x01\x00\x76\x00");
    assert!(h.starts_with(
        b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (34, 24), }"
    ));
    assert!(h.ends_with(b" \n"));
    assert!(npy_header("<i8", &[5], None).starts_with(
        b"\x93NUMPY\x01\x00\x76\x00{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }"
    ));
    assert_eq!(npy_header("<i8", &[5], Some(192)).len(), 192);
}

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn npy_with_unknown_count_gets_its_header_and_sidecar() {
    let d = dir();
    let p = d.path().join("e.npy");
    let mut w = EmbeddingFile::create(&p, Format::Npy, 2, None).unwrap();
    w.write(&Ids::Int(vec![7, 9]), &[1.0, 2.0, 3.0, 4.0])
        .unwrap();
    w.write(&Ids::Int(vec![11]), &[5.0, 6.0]).unwrap();
    w.close().unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let head = String::from_utf8_lossy(&bytes[10..bytes.len() - 24]).into_owned();
    assert!(head.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }"));
    let data: Vec<f32> = bytes[bytes.len() - 24..]
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(data, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let ids = std::fs::read(d.path().join("e.ids.npy")).unwrap();
    assert_eq!(&ids[ids.len() - 24..ids.len() - 16], &7i64.to_le_bytes());
    assert_eq!(names(d.path()), ["e.ids.npy", "e.npy"]);
    // String ids replace the integer sidecar.
    let mut w = EmbeddingFile::create(&p, Format::Npy, 2, Some(1)).unwrap();
    w.write(&Ids::Str(vec!["é".into()]), &[1.0, 2.0]).unwrap();
    w.close().unwrap();
    assert_eq!(
        std::fs::read_to_string(d.path().join("e.ids.txt")).unwrap(),
        "é\n"
    );
    assert_eq!(names(d.path()), ["e.ids.txt", "e.npy"]);
}

#[test]
fn word2vec_text_and_gzip() {
    let d = dir();
    for name in ["e.w2v", "e.w2v.gz"] {
        let p = d.path().join(name);
        let mut w = EmbeddingFile::create(&p, Format::W2v, 2, None).unwrap();
        w.write(
            &Ids::Str(vec!["a".into(), "b".into()]),
            &[0.5, -1e-7, 3.0, 0.1],
        )
        .unwrap();
        w.close().unwrap();
        let raw = std::fs::read(&p).unwrap();
        let text = if name.ends_with(".gz") {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&raw[..]), &mut s)
                .unwrap();
            s
        } else {
            String::from_utf8(raw).unwrap()
        };
        assert_eq!(text, "2 2\na 0.5 -1.00000001e-07\nb 3 0.100000001\n");
    }
    assert_eq!(names(d.path()), ["e.w2v", "e.w2v.gz"]);
}

#[test]
fn npz_is_a_zip_of_two_npy_members() {
    let d = dir();
    let p = d.path().join("e.npz");
    let mut w = EmbeddingFile::create(&p, Format::Npz, 1, None).unwrap();
    w.write(&Ids::Str(vec!["ab".into(), "c".into()]), &[1.0, 2.0])
        .unwrap();
    w.close().unwrap();
    let z = std::fs::read(&p).unwrap();
    assert_eq!(&z[..4], b"PK\x03\x04");
    assert_eq!(&z[z.len() - 22..z.len() - 18], b"PK\x05\x06");
    // The ids member: a <U2 array, UTF-32LE, zero-padded.
    let ids_at = 30 + "ids.npy".len() + 20;
    let ids_npy = &z[ids_at..];
    assert!(ids_npy[10..].starts_with(b"{'descr': '<U2', 'fortran_order': False, 'shape': (2,), }"));
    let items = &ids_npy[128..128 + 16];
    assert_eq!(items, b"a\0\0\0b\0\0\0c\0\0\0\0\0\0\0");
    // The CRC in the local header is the member's.
    let mut crc = flate2::Crc::new();
    crc.update(&ids_npy[..144]);
    assert_eq!(&z[14..18], &crc.sum().to_le_bytes());
    assert_eq!(names(d.path()), ["e.npz"]);
}

#[test]
fn errors_keep_the_previous_file_and_leave_nothing() {
    let d = dir();
    let p = d.path().join("e.w2v");
    std::fs::write(&p, "previous").unwrap();
    let mut w = EmbeddingFile::create(&p, Format::W2v, 1, None).unwrap();
    let err = w
        .write(&Ids::Str(vec!["new york".into()]), &[1.0])
        .unwrap_err();
    assert!(
        err.to_string().contains("'new york' contains whitespace"),
        "{err}"
    );
    drop(w);
    let mut w = EmbeddingFile::create(&p, Format::W2v, 1, Some(2)).unwrap();
    w.write(&Ids::Int(vec![1]), &[1.0]).unwrap();
    assert!(w.write(&Ids::Str(vec!["x".into()]), &[1.0]).is_err());
    let err = w.close().unwrap_err();
    assert!(err
        .to_string()
        .contains("1 rows were written but num_rows=2"));
    let q = d.path().join("n.npy");
    let mut w = EmbeddingFile::create(&q, Format::Npy, 1, None).unwrap();
    assert!(w
        .write(&Ids::Str(vec!["a\nb".into()]), &[1.0])
        .unwrap_err()
        .to_string()
        .contains("line break"));
    drop(w);
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "previous");
    assert_eq!(names(d.path()), ["e.w2v"]);
}

#[test]
fn word2vec_text_reads_back_what_was_written_and_names_a_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["e.w2v", "e.txt.gz"] {
        let path = dir.path().join(name);
        let ids = Ids::Str(vec!["a".into(), "b".into()]);
        let rows = [1.5f32, -0.1, 3e-30, f32::MAX];
        let mut f = EmbeddingFile::create(&path, Format::W2v, 2, None).unwrap();
        f.write(&ids, &rows).unwrap();
        f.close().unwrap();
        let (got_ids, got, dim) = text::read(&path).unwrap();
        assert_eq!((got_ids, dim), (vec!["a".to_string(), "b".to_string()], 2));
        assert_eq!(got, rows); // 9 significant digits: float32 exactly
    }
    let path = dir.path().join("bad.w2v");
    std::fs::write(&path, "2 2\na 1 2\nb 1\n").unwrap();
    let e = text::read(&path).unwrap_err().to_string();
    assert!(e.contains("bad.w2v:3: expected 3 fields, got 2"), "{e}");
    std::fs::write(&path, "1 2\na 1 2 3\n").unwrap();
    let e = text::read(&path).unwrap_err().to_string();
    assert!(e.contains("bad.w2v:2: expected 3 fields, got 4"), "{e}");
    std::fs::write(&path, "2 2\na 1 2\n").unwrap();
    assert!(text::read(&path).is_err());
}

#[test]
fn output_format_follows_the_extension_and_checks_a_given_format() {
    let ok = |p: &str, g: Option<&str>| output_format(p, g).unwrap();
    assert_eq!(ok("e.NPY", None), "npy");
    assert_eq!(ok("e.pq", None), "parquet");
    assert_eq!(ok("e.vec.gz", None), "w2v");
    assert_eq!(ok("-", None), "w2v");
    assert_eq!(ok("e.bin", Some("npz")), "npz"); // no known extension: the given format
    assert_eq!(ok("e.npy", Some("npy")), "npy");
    let err = |p: &str, g: Option<&str>| output_format(p, g).unwrap_err().to_string();
    assert!(err("e.npy", Some("w2v")).contains("does not match the file's extension"));
    assert!(err("e.npz.gz", None).contains("cannot tell the output format"));
    assert!(err("e.bin", None).contains("cannot tell the output format"));
    assert!(err("e.bin", Some("csv")).contains("format must be one of"));
}

#[test]
fn row_check_counts_rows_and_refuses_a_kind_change_or_too_many_rows() {
    let mut c = RowCheck::new(2, Some(3)).unwrap();
    assert!(RowCheck::new(0, None).is_err());
    assert_eq!(c.admit(&Ids::Int(vec![]), 0).unwrap(), None);
    assert_eq!(c.admit(&Ids::Int(vec![1, 2]), 4).unwrap(), Some(Kind::Int));
    assert!(c.admit(&Ids::Int(vec![3]), 3).is_err()); // not 2 values a row
    assert!(c.kind_change(&Ids::Str(vec!["a".into()])).is_some());
    assert!(c.admit(&Ids::Str(vec!["a".into()]), 2).is_err());
    assert!(c
        .finish()
        .unwrap_err()
        .to_string()
        .contains("2 rows were written"));
    assert!(c.admit(&Ids::Int(vec![3, 4]), 4).is_err()); // more than num_rows
    assert_eq!(c.admit(&Ids::Int(vec![3]), 2).unwrap(), None);
    assert_eq!(c.rows, 3);
    c.finish().unwrap();
}
