//! The CSV dialect read back: columns by name, empty and refused values, and cut last lines.

use super::*;

fn write(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("t.csv");
    std::fs::write(&path, text).unwrap();
    path
}

fn read(path: &Path) -> Result<Vec<(u32, f64, bool)>> {
    read_rows(path, "test file", &["a", "b", "c"], |row| {
        Ok((row.parse("a")?, row.float("b")?, row.boolean("c")?))
    })
}

#[test]
fn columns_found_by_name_and_extra_columns_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "c,new,b,a\r\ntrue,x,0.5,7\r\nfalse,y,,8\n");
    let rows = read(&path).unwrap();
    assert_eq!((rows[0].0, rows[0].1, rows[0].2), (7, 0.5, true));
    assert!(rows[1].1.is_nan() && !rows[1].2);
}

#[test]
fn errors_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("", "empty file"),
        ("a,b\n1,2\n", "lacks column(s) c"),
        ("a,b,c\n1,2,true\n1,2\n", "line 3: 2 fields"),
        ("a,b,c\n1,inf,true\n", "line 2: column b: 'inf'"),
        ("a,b,c\n-1,1,true\n", "line 2: column a: cannot read '-1'"),
        ("a,b,c\n1,1,yes\n", "line 2: column c: 'yes'"),
        ("a,b,c\n\n1,1,true\n", "line 2: empty line"),
    ];
    for (text, want) in cases {
        let path = write(dir.path(), text);
        let err = read(&path).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::Input { .. }), "{msg}");
        assert!(
            msg.contains("t.csv") && msg.contains(want),
            "{text:?}: {msg}"
        );
    }
}

#[test]
fn a_cut_off_last_line_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a,b,c\n1,2,true\n3,4,tr");
    let cols = ["a", "b", "c"];
    let (rows, cut) =
        read_rows_until_cut(&path, "test file", &cols, |r| r.parse::<u32>("a")).unwrap();
    assert_eq!(rows, vec![1]);
    let cut = cut.unwrap();
    assert_eq!((cut.line, cut.text.as_str()), (3, "3,4,tr"));
    let path = write(dir.path(), "a,b");
    assert!(read(&path).unwrap_err().to_string().contains("header"));
}

#[test]
fn a_failed_append_leaves_whole_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = CsvFile::create(dir.path(), "t.csv", &["a", "b", "c"]).unwrap();
    csv.append("1,2,true\n").unwrap();
    // A file opened read-only fails every write, like a full disk.
    csv.file = File::open(csv.path()).unwrap();
    assert!(csv.append("3,4,false\n").is_err());
    let text = std::fs::read_to_string(csv.path()).unwrap();
    assert_eq!(text, "a,b,c\n1,2,true\n");
}

#[test]
fn non_utf8_is_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.csv");
    std::fs::write(&path, b"a,b,c\n\xff\xfe,1,true\n").unwrap();
    let msg = read(&path).unwrap_err().to_string();
    assert!(msg.contains("line 2: not UTF-8"), "{msg}");
}

#[test]
fn floats_round_trip_and_text_is_checked() {
    for x in [
        0.1 + 0.2,
        1e-9,
        123456.789012345,
        0.0,
        -0.25,
        f64::MIN_POSITIVE,
    ] {
        assert_eq!(float(x).parse::<f64>().unwrap(), x);
    }
    assert_eq!(float(f64::NAN), "");
    assert!(text("backend", "host").is_ok());
    assert!(text("backend", "a,b").is_err());
}
