//! The two 8-bit float formats NCCL reduces since 2.24 (`ncclFloat8e4m3`, `ncclFloat8e5m2`), as
//! bytes: decoding, and encoding with round to nearest (ties to even) and saturation to the
//! largest finite value, as CUDA's `__nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...)` does.
//!
//! E4M3 is the OCP "fn" variant (OCP 8-bit Floating Point Specification 1.0, 2023): bias 7, no
//! infinities, one NaN per sign (`S.1111.111`), largest finite 448. E5M2 follows IEEE 754: bias
//! 15, infinities and NaNs at exponent 31, largest finite 57344. Both have subnormals.

/// One of the two formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp8 {
    E4M3,
    E5M2,
}

impl Fp8 {
    /// Mantissa bits.
    fn mantissa_bits(self) -> i32 {
        match self {
            Fp8::E4M3 => 3,
            Fp8::E5M2 => 2,
        }
    }

    /// Exponent bias.
    fn bias(self) -> i32 {
        match self {
            Fp8::E4M3 => 7,
            Fp8::E5M2 => 15,
        }
    }

    /// The largest finite value.
    pub fn max_finite(self) -> f64 {
        match self {
            Fp8::E4M3 => 448.0,
            Fp8::E5M2 => 57344.0,
        }
    }

    /// The value of the byte `bits`.
    pub fn decode(self, bits: u8) -> f64 {
        let m_bits = self.mantissa_bits();
        let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
        let exp = i32::from((bits & 0x7F) >> m_bits);
        let man = f64::from(bits & ((1 << m_bits) - 1));
        let scale = f64::from(1u32 << m_bits);
        match (self, exp) {
            (Fp8::E4M3, 15) if man == 7.0 => f64::NAN,
            (Fp8::E5M2, 31) if man == 0.0 => sign * f64::INFINITY,
            (Fp8::E5M2, 31) => f64::NAN,
            (_, 0) => sign * man / scale * pow2(1 - self.bias()),
            _ => sign * (1.0 + man / scale) * pow2(exp - self.bias()),
        }
    }

    /// The byte nearest `x` (ties to even), saturated to the largest finite value; NaN is the
    /// format's NaN with `x`'s sign.
    pub fn encode(self, x: f64) -> u8 {
        let sign = if x.is_sign_negative() { 0x80 } else { 0 };
        if x.is_nan() {
            return sign | 0x7F;
        }
        let a = x.abs().min(self.max_finite());
        let m_bits = self.mantissa_bits();
        let min_normal_exp = 1 - self.bias();
        let exp = (a.log2().floor() as i32).max(min_normal_exp);
        // Every value of the binade is a multiple of the quantum: rounding to one is exact in
        // f64, and a carry into the next binade still lands on a value of the format.
        let quantum = pow2(exp - m_bits);
        let r = (a / quantum).round_ties_even() * quantum;
        sign | self.bits_of(r)
    }

    /// The bits of a non-negative value of the format.
    fn bits_of(self, r: f64) -> u8 {
        let m_bits = self.mantissa_bits();
        let min_normal_exp = 1 - self.bias();
        if r < pow2(min_normal_exp) {
            return (r / pow2(min_normal_exp - m_bits)) as u8;
        }
        let exp = r.log2().floor() as i32;
        let man = (r / pow2(exp) - 1.0) * f64::from(1u32 << m_bits);
        (((exp + self.bias()) << m_bits) as u8) | man as u8
    }
}

/// 2^e for the small exponents of these formats.
fn pow2(e: i32) -> f64 {
    2f64.powi(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_decodes_and_encodes_back_to_itself() {
        for f in [Fp8::E4M3, Fp8::E5M2] {
            for bits in 0..=255u8 {
                let v = f.decode(bits);
                if v.is_finite() {
                    assert_eq!(f.encode(v), bits, "{f:?} {bits:#04x} = {v}");
                }
            }
        }
    }

    #[test]
    fn known_values_match_the_ocp_tables() {
        // OCP 8-bit Floating Point Specification 1.0, table 1 and 2.
        assert_eq!(Fp8::E4M3.decode(0x7E), 448.0);
        assert_eq!(Fp8::E4M3.decode(0x01), 2f64.powi(-9));
        assert_eq!(Fp8::E4M3.decode(0x08), 2f64.powi(-6));
        assert!(Fp8::E4M3.decode(0x7F).is_nan());
        assert_eq!(Fp8::E5M2.decode(0x7B), 57344.0);
        assert_eq!(Fp8::E5M2.decode(0x01), 2f64.powi(-16));
        assert_eq!(Fp8::E5M2.decode(0x7C), f64::INFINITY);
        assert_eq!(Fp8::E5M2.decode(0xFC), f64::NEG_INFINITY);
        assert!(Fp8::E5M2.decode(0x7D).is_nan());
        assert_eq!(Fp8::E4M3.decode(0xC0), -2.0);
    }

    #[test]
    fn encoding_rounds_to_nearest_even_and_saturates() {
        let e4 = Fp8::E4M3;
        // Between 16 and 32 the step is 2: 17 is a tie kept at 16 (even), 19 a tie up to 20.
        assert_eq!(e4.decode(e4.encode(17.0)), 16.0);
        assert_eq!(e4.decode(e4.encode(19.0)), 20.0);
        assert_eq!(e4.decode(e4.encode(17.1)), 18.0);
        // Saturation, not infinity or NaN.
        assert_eq!(e4.decode(e4.encode(1e9)), 448.0);
        assert_eq!(e4.decode(e4.encode(-500.0)), -448.0);
        assert_eq!(Fp8::E5M2.decode(Fp8::E5M2.encode(f64::INFINITY)), 57344.0);
        // A carry into the next binade: 15.5 lies between 15 and 16, a tie to 16.
        assert_eq!(e4.decode(e4.encode(15.5)), 16.0);
        // Subnormals and below half the smallest.
        assert_eq!(
            e4.decode(e4.encode(3.0 * 2f64.powi(-9))),
            3.0 * 2f64.powi(-9)
        );
        assert_eq!(e4.encode(2f64.powi(-11)), 0);
        assert_eq!(e4.encode(-0.0), 0x80);
        assert_eq!(e4.encode(f64::NAN), 0x7F);
    }

    #[test]
    fn integers_are_exact_up_to_16_and_8() {
        for i in 0..=16 {
            assert_eq!(
                Fp8::E4M3.decode(Fp8::E4M3.encode(f64::from(i))),
                f64::from(i)
            );
        }
        for i in 0..=8 {
            assert_eq!(
                Fp8::E5M2.decode(Fp8::E5M2.encode(f64::from(i))),
                f64::from(i)
            );
        }
        assert_ne!(Fp8::E5M2.decode(Fp8::E5M2.encode(9.0)), 9.0);
    }
}
