//! Names that cannot drift. Every small enum whose values appear on the command line, in result
//! files or in help (ops, algorithms, dtypes, backends, transports, export formats, fit forms,
//! telemetry sources, ...) is defined once with [`named_enum!`]: the variants and their stable
//! names. The same definition gives `ALL`, `Display`, `FromStr` (an unknown name is one usage
//! line listing the valid ones), serde through the name, and, through [`one_of`] and [`list_of`],
//! the values clap lists in `--help`.

use std::ffi::OsStr;
use std::marker::PhantomData;
use std::str::FromStr;

use clap::builder::{PossibleValue, TypedValueParser};

use crate::error::Error;

/// An enum defined by [`named_enum!`]: its values and their names.
pub trait Named: Copy + Send + Sync + 'static + FromStr<Err = Error> {
    /// Every value, in a stable order.
    fn all() -> &'static [Self];
    /// The stable name on the command line and in files.
    fn name(self) -> &'static str;
    /// Other names read as this value.
    fn aliases(self) -> &'static [&'static str];
}

/// Every name of `T`, in its stable order.
pub fn names<T: Named>() -> Vec<&'static str> {
    T::all().iter().map(|v| v.name()).collect()
}

/// Defines a small enum with stable lower-case names used on the command line and in files:
/// `name`, `ALL`, [`Named`], Display, FromStr (an unknown name is a usage error listing the valid
/// ones) and serde through the name. Used for every such enum of the crate. A variant may list
/// other names after its own (`F32 => "f32" | "float"`, nccl-tests' spelling): read as the
/// variant, never written.
macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident, $what:literal, { $($(#[$vm:meta])* $var:ident => $text:literal $(| $alias:literal)*),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vm])* $var),+ }

        impl $name {
            /// Every value, in a stable order.
            pub const ALL: &'static [$name] = &[$($name::$var),+];

            /// The stable name used on the command line and in result files.
            pub fn name(self) -> &'static str {
                match self { $($name::$var => $text),+ }
            }

            /// Other names read as this value (other tools' spellings); never written.
            pub fn aliases(self) -> &'static [&'static str] {
                match self { $($name::$var => &[$($alias),*]),+ }
            }
        }

        impl $crate::named::Named for $name {
            fn all() -> &'static [Self] {
                Self::ALL
            }
            fn name(self) -> &'static str {
                $name::name(self)
            }
            fn aliases(self) -> &'static [&'static str] {
                $name::aliases(self)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.pad(self.name())
            }
        }

        // Files use the same names as the command line.
        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                let text = <String as ::serde::Deserialize>::deserialize(d)?;
                text.parse().map_err(::serde::de::Error::custom)
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::error::Error;
            fn from_str(s: &str) -> ::std::result::Result<Self, $crate::error::Error> {
                let want = s.trim().to_ascii_lowercase();
                let named = |v: &$name| v.name() == want || v.aliases().contains(&want.as_str());
                Self::ALL.iter().copied().find(named).ok_or_else(|| {
                    let valid: Vec<_> = Self::ALL.iter().map(|v| v.name()).collect();
                    $crate::error::Error::usage(format!(
                        "unknown {} '{}'; valid values: {}", $what, s, valid.join(", ")
                    ))
                })
            }
        }
    };
}
pub(crate) use named_enum;

/// A comma-separated list of `T`'s names (or aliases), each once; `all` is every value (as
/// nccl-tests' `-d all` and `-o all`).
pub fn parse_names<T: Named + PartialEq>(s: &str) -> Result<Vec<T>, Error> {
    match s.trim().eq_ignore_ascii_case("all") {
        true => Ok(T::all().to_vec()),
        false => crate::units::parse_list::<T>(s),
    }
}

/// A clap value parser for one value of `T`: parsed by `T`'s own `FromStr` (its message), its
/// names listed in `--help`.
pub fn one_of<T: Named>() -> NamedParser<T, false> {
    NamedParser(PhantomData)
}

/// A clap value parser for a comma-separated list of `T` (`units::parse_list`), kept as the
/// text the flag gave; `--help` lists the names a list may hold.
pub fn list_of<T: Named + PartialEq>() -> NamedParser<T, true> {
    NamedParser(PhantomData)
}

/// See [`one_of`] and [`list_of`].
#[derive(Clone, Copy, Debug)]
pub struct NamedParser<T, const LIST: bool>(PhantomData<T>);

/// The text of a flag's value, or clap's own error for one that is not UTF-8.
fn utf8<'a>(cmd: &clap::Command, value: &'a OsStr) -> Result<&'a str, clap::Error> {
    value
        .to_str()
        .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidUtf8).with_cmd(cmd))
}

/// Our usage error for a flag's value, as clap words its own: the flag, then why.
fn invalid(cmd: &clap::Command, arg: Option<&clap::Arg>, text: &str, e: Error) -> clap::Error {
    let flag = arg.map_or_else(|| String::from("..."), ToString::to_string);
    let msg = format!("invalid value '{text}' for '{flag}': {e}\n");
    clap::Error::raw(clap::error::ErrorKind::InvalidValue, msg).with_cmd(cmd)
}

fn possible<T: Named>() -> Box<dyn Iterator<Item = PossibleValue>> {
    Box::new(
        T::all()
            .iter()
            .map(|v| PossibleValue::new(v.name()).aliases(v.aliases().iter().copied())),
    )
}

impl<T: Named> TypedValueParser for NamedParser<T, false> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let text = utf8(cmd, value)?;
        text.parse().map_err(|e| invalid(cmd, arg, text, e))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(possible::<T>())
    }
}

impl<T: Named + PartialEq> TypedValueParser for NamedParser<T, true> {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        let text = utf8(cmd, value)?;
        match parse_names::<T>(text) {
            Ok(_) => Ok(text.to_string()),
            Err(e) => Err(invalid(cmd, arg, text, e)),
        }
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(possible::<T>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, Command};

    named_enum!(
        /// A test enum.
        Fruit, "fruit", {
            Apple => "apple",
            BloodOrange => "blood-orange",
        }
    );

    fn command() -> Command {
        Command::new("t")
            .arg(Arg::new("one").long("one").value_parser(one_of::<Fruit>()))
            .arg(
                Arg::new("many")
                    .long("many")
                    .value_parser(list_of::<Fruit>()),
            )
    }

    fn parse(args: &[&str]) -> Result<clap::ArgMatches, String> {
        let mut argv = vec!["t"];
        argv.extend_from_slice(args);
        command()
            .try_get_matches_from(argv)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn one_value_parses_by_name_in_any_case() {
        let m = parse(&["--one", " Blood-Orange"]).unwrap();
        assert_eq!(m.get_one::<Fruit>("one"), Some(&Fruit::BloodOrange));
    }

    #[test]
    fn a_list_keeps_its_text_once_every_item_is_a_name() {
        let m = parse(&["--many", "apple,blood-orange,apple"]).unwrap();
        let text = m.get_one::<String>("many").map(String::as_str);
        assert_eq!(text, Some("apple,blood-orange,apple"));
        let items: Vec<Fruit> = crate::units::parse_list(text.unwrap_or_default()).unwrap();
        assert_eq!(items, [Fruit::Apple, Fruit::BloodOrange]);
    }

    #[test]
    fn a_bad_value_names_the_flag_the_value_and_every_valid_name() {
        let e = parse(&["--one", "pear"]).unwrap_err();
        assert!(
            e.contains("invalid value 'pear' for '--one <one>': unknown fruit 'pear'; valid values: apple, blood-orange"),
            "{e}"
        );
        let e = parse(&["--many", "apple,,pear"]).unwrap_err();
        assert!(e.contains("'--many <many>': empty item"), "{e}");
        let e = parse(&["--many", "apple,pear"]).unwrap_err();
        assert!(e.contains("unknown fruit 'pear'"), "{e}");
    }

    #[test]
    fn help_lists_every_name_from_the_definition() {
        let help = command().render_long_help().to_string();
        let listed = help
            .matches("[possible values: apple, blood-orange]")
            .count();
        assert_eq!(listed, 2, "{help}");
        assert_eq!(names::<Fruit>(), ["apple", "blood-orange"]);
    }
}
