"""A PDF with a text layer, written by hand for the tests: one Helvetica text object a page,
optionally with a ToUnicode map (what a text layer says a code is, whatever the glyph)."""

from __future__ import annotations


def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _to_unicode(codes: dict[str, str]) -> bytes:
    """A ToUnicode CMap stream mapping single-byte codes to text."""
    chars = "".join(
        f"<{ord(code):02X}> <{text.encode('utf-16-be').hex().upper()}>\n"
        for code, text in codes.items()
    )
    body = (
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
        "/CMapName /Test-UCS def /CMapType 2 def\n"
        "1 begincodespacerange <00> <FF> endcodespacerange\n"
        f"{len(codes)} beginbfchar\n{chars}endbfchar\n"
        "endcmap CMapName currentdict /CMap defineresource pop end end"
    ).encode("ascii")
    return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(body), body)


def pdf_bytes(pages: list[list[str]], to_unicode: dict[str, str] | None = None) -> bytes:
    """A valid PDF 1.4 file whose page i shows `pages[i]`, one line of ASCII text each; with
    `to_unicode`, its text layer reads each of those characters as the text it maps to."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica"
    if to_unicode:
        font += b" /ToUnicode 4 0 R"
    objects.append(font + b" >>")  # 3
    if to_unicode:
        objects.append(_to_unicode(to_unicode))  # 4
    kids = []
    for lines in pages:
        body = "BT /F1 12 Tf 14 TL 72 720 Td " + " ".join(f"({_escape(t)}) Tj T*" for t in lines)
        stream = (body + " ET").encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        content = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 3 0 R >> >> >>" % content
        )
        kids.append(len(objects))
    refs = " ".join(f"{k} 0 R" for k in kids).encode()
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (refs, len(kids))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, obj)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)
