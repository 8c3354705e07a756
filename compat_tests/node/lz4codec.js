// LZ4 frame codec for kafkajs (pure JS), on lz4js's block functions.
//
// lz4js's own frame reader skips a block checksum *before* the block instead of after it, so
// frames from liblz4/cramjam (which set block checksums) come out wrong; this module parses
// frames itself (content size, dictionary id, block and content checksums are skipped, not
// verified). lz4js's block compressor may start a match within the last 12 bytes of a block,
// which liblz4 rejects, so blocks are compressed here too. Frames are written the way Kafka's
// Java client writes them: independent 64 KiB blocks, no checksums.
'use strict'

const lz4 = require('lz4js')
const xxh32 = require('lz4js/xxh32')

const MAGIC = 0x184d2204
const FLG_VERSION = 0x40
const FLG_BLOCK_INDEPENDENT = 0x20
const FLG_BLOCK_CHECKSUM = 0x10
const FLG_CONTENT_SIZE = 0x08
const FLG_CONTENT_CHECKSUM = 0x04
const FLG_DICT_ID = 0x01
const BLOCK_UNCOMPRESSED = 0x80000000
const BLOCK_SIZES = { 4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024 }
const WRITE_BLOCK_ID = 4

function parseHeader(src) {
  if (src.length < 7 || src.readUInt32LE(0) !== MAGIC) throw new Error('lz4: bad frame magic')
  const flg = src[4]
  if ((flg & 0xc0) !== FLG_VERSION) throw new Error(`lz4: unsupported frame version (FLG ${flg})`)
  const maxBlock = BLOCK_SIZES[(src[5] >> 4) & 7]
  if (!maxBlock) throw new Error(`lz4: bad block size (BD ${src[5]})`)
  let index = 6
  if (flg & FLG_CONTENT_SIZE) index += 8
  if (flg & FLG_DICT_ID) index += 4
  index += 1 // header checksum
  return { flg, maxBlock, index }
}

// The data blocks of a frame from `start`: { at, size, uncompressed } for each, up to the end mark.
function * frameBlocks(src, start, blockChecksum) {
  for (let i = start; ;) {
    const word = src.readUInt32LE(i)
    i += 4
    if (word === 0) return
    const size = word & 0x7fffffff
    yield { at: i, size, uncompressed: (word & BLOCK_UNCOMPRESSED) !== 0 }
    i += size + (blockChecksum ? 4 : 0)
  }
}

function decompress(src) {
  src = Buffer.from(src.buffer, src.byteOffset, src.length)
  const { flg, maxBlock, index: start } = parseHeader(src)
  const blockChecksum = (flg & FLG_BLOCK_CHECKSUM) !== 0
  // First pass: an upper bound of the output size.
  let bound = 0
  for (const block of frameBlocks(src, start, blockChecksum)) {
    bound += block.uncompressed ? block.size : maxBlock
  }
  const dst = Buffer.alloc(bound)
  let d = 0
  for (const { at, size, uncompressed } of frameBlocks(src, start, blockChecksum)) {
    if (uncompressed) {
      src.copy(dst, d, at, at + size)
      d += size
    } else {
      d = lz4.decompressBlock(src, dst, at, size, d)
    }
  }
  return dst.subarray(0, d)
}

const MIN_MATCH = 4
const MF_LIMIT = 12 // the last match starts at least 12 bytes before the end of a block
const LAST_LITERALS = 5 // the last 5 bytes of a block are literals

function writeLength(dst, d, n) {
  for (; n >= 255; n -= 255) dst[d++] = 255
  dst[d++] = n
  return d
}

// Greedy LZ4 block compression of src[start, start + n) into dst; returns the compressed size.
function compressBlock(src, start, n, dst, table) {
  const end = start + n
  const matchLimit = end - LAST_LITERALS
  const mfLimit = end - MF_LIMIT
  table.fill(-1)
  let d = 0
  let anchor = start
  let i = start
  while (i < mfLimit) {
    const seq = src.readUInt32LE(i)
    const h = Math.imul(seq, 2654435761) >>> 16
    const ref = table[h]
    table[h] = i
    if (ref < 0 || i - ref > 65535 || src.readUInt32LE(ref) !== seq) {
      i += 1 + ((i - anchor) >> 6)
      continue
    }
    let len = MIN_MATCH
    while (i + len < matchLimit && src[i + len] === src[ref + len]) len++
    const lit = i - anchor
    const m = len - MIN_MATCH
    dst[d++] = (Math.min(lit, 15) << 4) | Math.min(m, 15)
    if (lit >= 15) d = writeLength(dst, d, lit - 15)
    src.copy(dst, d, anchor, i)
    d += lit
    const offset = i - ref
    dst[d++] = offset & 0xff
    dst[d++] = offset >> 8
    if (m >= 15) d = writeLength(dst, d, m - 15)
    i += len
    anchor = i
  }
  const lit = end - anchor
  dst[d++] = Math.min(lit, 15) << 4
  if (lit >= 15) d = writeLength(dst, d, lit - 15)
  src.copy(dst, d, anchor, end)
  return d + lit
}

function compress(src) {
  src = Buffer.from(src.buffer, src.byteOffset, src.length)
  const maxBlock = BLOCK_SIZES[WRITE_BLOCK_ID]
  const parts = []
  const header = Buffer.alloc(7)
  header.writeUInt32LE(MAGIC, 0)
  header[4] = FLG_VERSION | FLG_BLOCK_INDEPENDENT
  header[5] = WRITE_BLOCK_ID << 4
  header[6] = (xxh32.hash(0, header, 4, 2) >>> 8) & 0xff
  parts.push(header)
  const table = new Int32Array(1 << 16)
  const out = Buffer.alloc(maxBlock + Math.ceil(maxBlock / 255) + 16)
  for (let s = 0; s < src.length; s += maxBlock) {
    const n = Math.min(maxBlock, src.length - s)
    const c = compressBlock(src, s, n, out, table) // independent: matches stay in the block
    const size = Buffer.alloc(4)
    if (c >= n) {
      size.writeUInt32LE((BLOCK_UNCOMPRESSED | n) >>> 0, 0)
      parts.push(size, Buffer.from(src.subarray(s, s + n)))
    } else {
      size.writeUInt32LE(c, 0)
      parts.push(size, Buffer.from(out.subarray(0, c)))
    }
  }
  parts.push(Buffer.alloc(4)) // end mark
  return Buffer.concat(parts)
}

module.exports = () => ({
  async compress(encoder) {
    return compress(encoder.buffer)
  },
  async decompress(buffer) {
    return decompress(buffer)
  },
})
module.exports.compress = compress
module.exports.decompress = decompress
