#!/usr/bin/env python3
"""scripts/kernel-census without CUDA: its parsers on the cuobjdump, ptxas -v and PTX samples in
census/ (see census/README.md for where each comes from), the demangling of our template
arguments, the occupancy arithmetic on cases worked by hand, and --check on crafted inputs."""

import collections
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, '..', '..', '..', 'scripts', 'kernel-census')
SAMPLES = os.path.join(HERE, 'census')


def load_script():
    # The script has no .py suffix: name its loader outright.
    spec = spec_from_loader('kernel_census', SourceFileLoader('kernel_census', SCRIPT))
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


census = load_script()

BINNING = ('_ZN10sortd_cuda14binning_kernelINS_14OnesweepPolicyINS_15HistogramPolicyILi256ELi16EEE'
           'NS_13BinningPolicyILi256ELi16EEEEEj{}EEvNS_13BinningParamsIT0_T1_EE')
BINNING_KEYS = BINNING.format('NS_7NoValueE')
BINNING_PAIRS = BINNING.format('j')
HISTOGRAM = ('_ZN10sortd_cuda16histogram_kernelINS_14OnesweepPolicyINS_15HistogramPolicyILi256ELi16'
             'EEENS_13BinningPolicyILi256ELi16EEEEEjEEvPKT0_jPj14sortd__twiddlejjj')
SCAN = ('_ZN10sortd_cuda11scan_kernelINS_14OnesweepPolicyINS_15HistogramPolicyILi256ELi16EEENS_13'
        'BinningPolicyILi256ELi16EEEEEEEvPKjPj')
# A kernel's name on the host side, as nm shows it: nvcc 13 gives it internal linkage ('L').
BINNING_64_HOST = ('_ZN10sortd_cudaL14binning_kernelINS_14OnesweepPolicyINS_15HistogramPolicyIL'
                   'i256ELi8EEENS_13BinningPolicyILi256ELi12EEEEEmjEEvNS_13BinningParamsIT0_T1_EE')


def sample(name):
    with open(os.path.join(SAMPLES, name)) as f:
        return f.read()


def needs(program):
    return unittest.skipUnless(shutil.which(program), f'no {program}')


class ParseResUsage(unittest.TestCase):
    def setUp(self):
        self.res = census.parse_res_usage(sample('res-usage.txt'))

    def test_every_function_of_both_cubins(self):
        self.assertEqual(len(self.res), 8)
        self.assertEqual({arch for arch, _ in self.res}, {80, 90})

    def test_figures(self):
        self.assertEqual(self.res[(80, BINNING_KEYS)], census.Resources(62, 18440, 0, 0))
        self.assertEqual(self.res[(90, BINNING_KEYS)], census.Resources(64, 19464, 0, 0))
        self.assertEqual(self.res[(90, BINNING_PAIRS)].registers, 74)
        self.assertEqual(self.res[(80, HISTOGRAM)], census.Resources(48, 4096, 0, 0))
        self.assertEqual(self.res[(90, SCAN)].shared, 0)

    def test_spills(self):
        text = sample('res-usage.txt').replace('REG:62 STACK:0 SHARED:18440 LOCAL:0',
                                               'REG:62 STACK:16 SHARED:18440 LOCAL:24')
        res = census.parse_res_usage(text)
        self.assertEqual(res[(80, BINNING_KEYS)], census.Resources(62, 18440, 24, 16))

    def test_ptx_parts_are_not_cubins(self):
        text = ('Fatbin elf code:\n================\narch = sm_80\n'
                ' Function g:\n  REG:2 STACK:0 SHARED:0 LOCAL:0\n'
                'Fatbin ptx code:\n================\narch = sm_90\n'
                ' Function f:\n  REG:1 STACK:0 SHARED:0 LOCAL:0\n')
        self.assertEqual(census.parse_res_usage(text), {(80, 'g'): census.Resources(2, 0, 0, 0)})

    def test_demangled_names_keep_their_colons(self):
        text = 'Fatbin elf code:\narch = sm_90\n Function ns::f(int):\n  REG:3 SHARED:0\n'
        self.assertIn((90, 'ns::f(int)'), census.parse_res_usage(text))


class ParseSass(unittest.TestCase):
    def setUp(self):
        self.sass = census.parse_sass(sample('sass.txt'))

    def classes(self, arch, symbol):
        return census.instruction_classes(self.sass[(arch, symbol)])

    def test_every_function_of_both_cubins(self):
        self.assertEqual(len(self.sass), 8)

    def test_binning_sm90_by_class(self):
        # Counted by hand in census/sass.txt.
        want = {'MATCH': 2, 'VOTE': 1, 'SHFL': 1, 'BAR': 2, 'LDS': 2, 'STS': 1, 'ATOMS': 1,
                'LDG': 1, 'STG': 1, 'ATOMG/RED': 2, 'BRA': 2, 'INT': 8, 'other': 6}
        self.assertEqual(dict(self.classes(90, BINNING_KEYS)), want)
        self.assertEqual(sum(self.sass[(90, BINNING_KEYS)].values()), 30)

    def test_full_mnemonics_are_kept(self):
        counts = self.sass[(90, BINNING_KEYS)]
        self.assertEqual(counts['MATCH.ANY'], 2)
        self.assertEqual(counts['BAR.SYNC.DEFER_BLOCKING'], 2)
        self.assertEqual(counts['ATOMG.E.ADD.STRONG.GPU'], 1)  # predicated @!P0

    def test_other_functions(self):
        self.assertEqual(self.classes(90, HISTOGRAM)['MATCH'], 0)
        self.assertEqual(self.classes(90, HISTOGRAM)['ATOMG/RED'], 1)
        self.assertEqual(self.classes(90, BINNING_PAIRS)['VOTE'], 1)  # VOTEU
        self.assertEqual(sum(self.sass[(80, BINNING_PAIRS)].values()), 5)

    def test_instruction_lines(self):
        cases = {
            '        /*0a10*/                   MATCH.ANY R4, R2 ;   /* 0x00 */': 'MATCH.ANY',
            '        /*0070*/               @P0 EXIT ;               /* 0x00 */': 'EXIT',
            '        /*0160*/              @!P0 BRA 0x190 ?trans5;   /* 0x00 */': 'BRA',
            '        /*0080*/              @!UP1 UIADD3 UR4, UR4, 0x1, URZ ;': 'UIADD3',
            '        /*0100*/                   BRA 0x100;': 'BRA',
            '        /*12a40*/                  NOP;': 'NOP',
            '        /*0050*/  IMAD R5, R5, UR4, R0    &req={1}   ?trans1;   /* 0x00 */': 'IMAD',
        }
        for line, want in cases.items():
            self.assertEqual(census.instruction_mnemonic(line), want, line)

    def test_not_instruction_lines(self):
        for line in ('                                   /* 0x000e220000000800 */',
                     '\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"',
                     '\t\tFunction : _Z1fv', '\t\t..........', '\tcode for sm_90', ''):
            self.assertIsNone(census.instruction_mnemonic(line), line)

    def test_classes(self):
        counts = collections.Counter({'MATCH.ANY': 1, 'VOTEU.ANY': 2, 'REDG.E.ADD.64': 1,
                                      'IMAD.WIDE.U32': 3, 'ULOP3.LUT': 1, 'LDGSTS.E': 1,
                                      'MOV': 4, 'S2R': 1})
        classes = census.instruction_classes(counts)
        self.assertEqual((classes['MATCH'], classes['VOTE'], classes['ATOMG/RED']), (1, 2, 1))
        self.assertEqual((classes['INT'], classes['LDG'], classes['other']), (4, 1, 5))


class ParseMaxThreads(unittest.TestCase):
    def test_launch_bounds(self):
        found = census.parse_max_threads(sample('elf.txt'))
        self.assertEqual(found[(80, BINNING_KEYS)], 256)
        self.assertEqual(found[(90, HISTOGRAM)], 256)
        self.assertEqual(found[(90, SCAN)], 32)
        self.assertNotIn((90, BINNING_PAIRS), found)  # not in the sample: the policy then

    def test_without_fatbin_headers(self):
        text = ('.nv.info._Z1fv\n\t<0x1>\n\tAttribute:\tEIATTR_MAX_THREADS\n'
                '\tFormat:\tEIFMT_SVAL\n\tValue:\t0x80 0x2 0x1 \n')
        self.assertEqual(census.parse_max_threads(text), {(None, '_Z1fv'): 256})


class ParsePtxas(unittest.TestCase):
    def setUp(self):
        self.res = census.parse_ptxas(sample('ptxas-v.txt'))

    def test_every_entry_of_both_runs(self):
        self.assertEqual(len(self.res), 8)
        self.assertEqual({arch for arch, _ in self.res}, {80, 90})

    def test_figures(self):
        # ptxas's smem has no reserved KiB on sm_90, where cuobjdump's SHARED says 19464.
        self.assertEqual(self.res[(80, BINNING_KEYS)], census.Resources(62, 18440, 0, 0))
        self.assertEqual(self.res[(90, BINNING_KEYS)], census.Resources(64, 18440, 0, 0))
        self.assertEqual(self.res[(90, BINNING_PAIRS)].registers, 74)
        self.assertEqual(self.res[(80, HISTOGRAM)], census.Resources(48, 4096, 0, 0))
        self.assertEqual(self.res[(90, SCAN)], census.Resources(19, 0, 0, 0))  # no smem field

    def test_spills(self):
        text = sample('ptxas-v.txt').replace(
            "for 'sm_80'\nptxas info    : Function properties for " + BINNING_KEYS
            + '\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads',
            "for 'sm_80'\nptxas info    : Function properties for " + BINNING_KEYS
            + '\n    40 bytes stack frame, 36 bytes spill stores, 32 bytes spill loads')
        res = census.parse_ptxas(text)
        self.assertEqual(res[(80, BINNING_KEYS)], census.Resources(62, 18440, 36, 40))
        self.assertEqual(res[(90, BINNING_KEYS)], census.Resources(64, 18440, 0, 0))

    def test_callee_frames_are_not_the_entry_s(self):
        text = ("ptxas info    : Function properties for _Z6calleev\n"
                "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
                "ptxas info    : Compiling entry function '_Z1kv' for 'sm_90a'\n"
                "ptxas info    : Function properties for _Z1kv\n"
                "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                "ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem\n")
        self.assertEqual(census.parse_ptxas(text),
                         {(90, '_Z1kv'): census.Resources(10, 256, 0, 0)})


class ParsePtx(unittest.TestCase):
    def setUp(self):
        self.counts, self.bounds = census.parse_ptx(sample('cuda_engine.ptx'))

    def classes(self, symbol):
        return dict(census.instruction_classes(self.counts[(90, symbol)], census.PTX))

    def test_entries_and_bounds(self):
        self.assertEqual(len(self.counts), 3)  # scan, iota and binning
        self.assertEqual(self.bounds, {(90, SCAN): 32, (90, BINNING_KEYS): 256})

    def test_binning_by_class(self):
        # Counted with grep in census/cuda_engine.ptx: its 7 bar.warp.sync are "other".
        want = {'match': 8, 'vote': 0, 'shfl': 8, 'bar': 1, 'ld.shared': 9, 'st.shared': 15,
                'atom.shared': 0, 'ld.global': 16, 'st.global': 0, 'atom.global/red': 1,
                'bra': 9, 'other': 114}
        self.assertEqual(self.classes(BINNING_KEYS), want)
        counts = self.counts[(90, BINNING_KEYS)]
        self.assertEqual(sum(counts.values()), 181)
        self.assertEqual(counts['match.any.sync.b32'], 8)
        self.assertEqual(counts['ld.param.v2.u32'], 8)  # {%r409, %r410}: no block of ours
        self.assertEqual(counts['ret'], 1)

    def test_scan(self):
        classes = self.classes(SCAN)
        self.assertEqual((classes['shfl'], classes['ld.global'], classes['st.global']), (5, 8, 8))
        self.assertEqual(sum(self.counts[(90, SCAN)].values()), 73)

    def test_opcodes(self):
        cases = {
            '\t@%p1 bra \t$L__BB8_2': 'bra',
            '\t@!%p3 match.any.sync.b32 \t%r5, %r4, %r3': 'match.any.sync.b32',
            '\tret': 'ret',
            '{ .reg .pred p': None,
            ' setp.ne.b32 p, %r1, 0': 'setp.ne.b32',
            ' }': None,
            '$L__BB8_2:': None,
            '\t.reg .b32 \t%r<1476>': None,
            '': None,
        }
        for statement, want in cases.items():
            self.assertEqual(census.ptx_opcode(statement), want, statement)

    def test_classes(self):
        cases = {
            'ld.volatile.global.u32': 'ld.global', 'ld.global.nc.v4.u32': 'ld.global',
            'ldu.global.u32': 'ld.global', 'ld.shared::cta.u32': 'ld.shared',
            'ld.param.u64': 'other', 'ld.local.u32': 'other', 'ld.u32': 'other',
            'st.relaxed.gpu.global.u32': 'st.global', 'st.shared.v4.u32': 'st.shared',
            'atom.shared.add.u32': 'atom.shared', 'red.global.add.u32': 'atom.global/red',
            'atom.add.u32': 'atom.global/red', 'cp.async.ca.shared.global': 'ld.global',
            'bar.sync': 'bar', 'barrier.sync.aligned': 'bar', 'bar.warp.sync': 'other',
            'vote.sync.ballot.b32': 'vote', 'shfl.sync.up.b32': 'shfl', 'bra.uni': 'bra',
            'matchers.x': 'other',
        }
        for opcode, want in cases.items():
            self.assertEqual(census.ptx_class(opcode), want, opcode)

    def test_inline_asm_and_functions(self):
        text = ('.target sm_80\n'
                '.func _Z6calleev()\n{\n\tmatch.any.sync.b32 %r1, %r2, -1;\n}\n'
                '.entry _Z1kv(\n\t.param .u64 p\n)\n.reqntid 64, 2\n{\n'
                '\t// begin inline asm\n\t{ .reg .pred p; vote.sync.any.pred p, 1, -1; }\n'
                '\t{\n\t.reg .b32 t;\n\tbar.sync 0;\n\t}\n'
                '\tmov.b64 {%r1, %r2}, %rd1;\n\tret;\n}\n'
                '.visible .entry _Z1gv()\n{\n\tret;\n}\n')
        counts, bounds = census.parse_ptx(text)
        self.assertEqual(counts, {(80, '_Z1kv'): {'vote.sync.any.pred': 1, 'bar.sync': 1,
                                                  'mov.b64': 1, 'ret': 1},
                                  (80, '_Z1gv'): {'ret': 1}})
        self.assertEqual(bounds, {(80, '_Z1kv'): 128})


class Names(unittest.TestCase):
    def test_template_args(self):
        text = 'void ns::f<A<1, 2>, B<C<3> >, int>(P<int, long>)'
        self.assertEqual(census.template_args(text, text.index('<')),
                         ['A<1, 2>', 'B<C<3> >', 'int'])

    def test_describe(self):
        binning = ('void sortd_cuda::binning_kernel<sortd_cuda::OnesweepPolicy<sortd_cuda::'
                   'HistogramPolicy<256, 8>, sortd_cuda::BinningPolicy<256, 12> >, unsigned long, '
                   'unsigned int>(sortd_cuda::BinningParams<unsigned long, unsigned int>)')
        self.assertEqual(census.describe(binning), census.Kernel('binning', 256, 12, 'u64', 'u32'))
        tuned = ('void sortd_cuda::binning_kernel<sortd_cuda::ArchPolicy<900, 1000, sortd_cuda::'
                 'OnesweepPolicy<sortd_cuda::HistogramPolicy<256, 16>, sortd_cuda::BinningPolicy<'
                 '256, 16, 4>, sortd_cuda::BinningPolicy<256, 12, 3>, 1073676288u> >, unsigned '
                 'int, sortd_cuda::NoValue>(sortd_cuda::BinningParams<unsigned int, '
                 'sortd_cuda::NoValue>)')
        kernel = census.describe(tuned)
        self.assertEqual(kernel, census.Kernel('binning', 256, 16, 'u32', '-', 900, 1000))
        self.assertEqual([kernel.built_for(a) for a in (80, 89, 90, 99, 100)],
                         [False, False, True, True, False])
        self.assertTrue(census.describe(binning).built_for(75))
        # keys alone, 4-byte values and 8-byte values each name their own policy
        three = ('void sortd_cuda::binning_kernel<sortd_cuda::ArchPolicy<900, 1000, sortd_cuda::'
                 'OnesweepPolicy<sortd_cuda::HistogramPolicy<256, 16>, sortd_cuda::BinningPolicy<'
                 '256, 20, 4>, sortd_cuda::BinningPolicy<384, 16, 2>, sortd_cuda::BinningPolicy<'
                 '256, 12, 3>, 1073676288u> >, unsigned int, {}>(sortd_cuda::BinningParams<'
                 'unsigned int, {}>)')
        for values, threads, items in (('sortd_cuda::NoValue', 256, 20),
                                        ('unsigned int', 384, 16), ('unsigned long', 256, 12)):
            kernel = census.describe(three.format(values, values))
            self.assertEqual((kernel.threads, kernel.items), (threads, items), values)
        self.assertIsNone(census.describe('void sortd_cuda::iota_kernel<unsigned int>(unsigned '
                                          'int*, unsigned int)'))

    @needs('c++filt')
    def test_demangle_our_kernels(self):
        names = census.demangle([BINNING_KEYS, HISTOGRAM, SCAN, BINNING_64_HOST, 'ns::f(int)'])
        self.assertEqual(census.describe(names[BINNING_KEYS]),
                         census.Kernel('binning', 256, 16, 'u32', '-'))
        self.assertEqual(census.describe(names[HISTOGRAM]),
                         census.Kernel('histogram', 256, 16, 'u32', None))
        self.assertEqual(census.describe(names[BINNING_64_HOST]),
                         census.Kernel('binning', 256, 12, 'u64', 'u32'))
        self.assertIsNone(census.describe(names[SCAN]))
        self.assertEqual(names['ns::f(int)'], 'ns::f(int)')


class Occupancy(unittest.TestCase):
    """Cases worked by hand with the rules of CUDA 13.0's cuda_occupancy.h."""

    def check(self, arch, threads, regs, smem, blocks, percent, limiter):
        occ = census.occupancy(arch, threads, regs, smem)
        self.assertEqual((occ.blocks, occ.percent, occ.limiter), (blocks, percent, limiter),
                         (arch, threads, regs, smem))

    def test_registers(self):
        # 64 x 32 = 2048 registers a warp, 8 warps a sub-partition, 32 an SM: 4 blocks of 8.
        self.check(90, 256, 64, 0, 4, 50.0, 'registers')
        # 74 x 32 = 2368 -> 2560 a warp, 6 a sub-partition, 24 an SM: 2 blocks of 12 warps.
        self.check(90, 384, 74, 0, 2, 37.5, 'registers')
        # 62 -> 2048 a warp, as 64: our sm_80 binning kernel.
        self.check(80, 256, 62, 18440, 4, 50.0, 'registers')
        # 74 -> 2560 a warp, 24 warps: 3 blocks of 8.
        self.check(90, 256, 74, 19464, 3, 37.5, 'registers')

    def test_sub_partitions(self):
        # 80 x 32 = 2560 a warp: 65536 / 2560 = 25 warps counted whole, but 6 per sub-partition
        # is 24: 24 one-warp blocks, not 25.
        self.check(90, 32, 80, 0, 24, 37.5, 'registers')

    def test_warps_and_blocks(self):
        # Turing: 32 warps an SM.
        self.check(75, 256, 32, 0, 4, 100.0, 'warps')
        self.check(75, 32, 16, 0, 16, 50.0, 'blocks')
        self.check(90, 32, 16, 0, 32, 50.0, 'blocks')

    def test_shared_memory(self):
        # sm_80: 41000 + 1024 reserved = 42024 -> 42112; 167936 / 42112 = 3 (4 without the
        # reserved KiB).
        self.check(80, 128, 32, 41000, 3, 18.75, 'shared')
        # sm_90: SHARED already holds the reserved KiB: 50176, 233472 / 50176 = 4.
        self.check(90, 256, 32, 50176, 4, 50.0, 'shared')
        # 57 KiB: 4 blocks fill the 228 KiB exactly; a second reserved KiB would make it 3.
        self.check(90, 256, 32, 57 * 1024, 4, 50.0, 'shared')
        # sm_75: no reserve, 256-byte units, 64 KiB: one 48 KiB block.
        self.check(75, 256, 32, 49152, 1, 25.0, 'shared')
        # A kernel with no shared memory still takes the reserved KiB: 228 blocks' worth.
        self.assertEqual(census.shared_limit(census.LIMITS[90], 0), 228)

    def test_ptxas_shared_memory(self):
        # ptxas -v leaves the reserved KiB out on sm_90 too: 57 KiB + 1 KiB, 3 blocks of 58 KiB.
        occ = census.occupancy(90, 256, 32, 57 * 1024, from_ptxas=True)
        self.assertEqual((occ.blocks, occ.limiter), (3, 'shared'))
        # Our u32 keys-only binning kernel from ptxas: 64 registers, 18440 + 1024 bytes.
        occ = census.occupancy(90, 256, 64, 18440, from_ptxas=True)
        self.assertEqual((occ.blocks, occ.percent, occ.limiter), (4, 50.0, 'registers'))

    def test_too_many_registers(self):
        # 128 x 32 = 4096 a warp, 4 a sub-partition: 16 warps, and the block has 32.
        self.check(90, 1024, 128, 0, 0, 0.0, 'registers')

    def test_unknown_arch(self):
        self.assertIsNone(census.occupancy(86, 256, 64, 0))


def row(arch, kind='binning', keys='u32', values='-', regs=64, shared=19464, local=0, stack=0,
        mnemonics=None, isa=census.SASS):
    kernel = census.Kernel(kind, 256, 16, keys, values if kind == 'binning' else None)
    res = census.Resources(regs, shared, local, stack)
    counts = collections.Counter({'IADD3': 3} if mnemonics is None else mnemonics)
    return census.Row(arch, kernel, '_Z1fv', 256, 'policy', res,
                      census.occupancy(arch, 256, regs, shared, isa.from_ptxas), counts, isa)


class Rows(unittest.TestCase):
    def test_other_architectures_stubs_are_left_out(self):
        name = ('void sortd_cuda::binning_kernel<sortd_cuda::ArchPolicy<{}, {}, sortd_cuda::'
                'OnesweepPolicy<sortd_cuda::HistogramPolicy<256, 16>, sortd_cuda::BinningPolicy<'
                '256, 16, 4> > >, unsigned int, sortd_cuda::NoValue>(sortd_cuda::BinningParams<'
                'unsigned int, sortd_cuda::NoValue>)')
        names = {'_Z1av': name.format(750, 900), '_Z1bv': name.format(900, 1000)}
        full, stub = census.Resources(64, 22552, 0, 0), census.Resources(4, 0, 0, 0)
        resources = {(80, '_Z1av'): full, (80, '_Z1bv'): stub,
                     (90, '_Z1av'): stub, (90, '_Z1bv'): full}
        rows = census.census(resources, {}, {}, names)
        self.assertEqual([(r.arch, r.symbol, r.resources.registers) for r in rows],
                         [(80, '_Z1av', 64), (90, '_Z1bv', 64)])


class Check(unittest.TestCase):
    def test_clean(self):
        rows = [row(80, regs=62), row(90), row(90, 'histogram', regs=47)]
        self.assertEqual(census.check(rows, {80, 90}), [])

    def test_match_in_binning_only(self):
        rows = [row(90, mnemonics={'MATCH.ANY': 2}),
                row(90, 'histogram', mnemonics={'MATCH.ANY': 1})]
        problems = census.check(rows, {90})
        self.assertEqual(len(problems), 1)
        self.assertIn('sm_90 binning_kernel<u32, -> (256 x 16): 2 MATCH', problems[0])

    def test_spills(self):
        problems = census.check([row(90), row(90, 'histogram', local=24, stack=8)], {90})
        self.assertEqual(len(problems), 1)
        self.assertIn('histogram_kernel<u32>', problems[0])
        self.assertIn('24 bytes of local memory', problems[0])
        self.assertEqual(len(census.check([row(90, stack=16)], {90})), 1)

    def test_low_occupancy(self):
        problems = census.check([row(80, regs=62), row(90, regs=72)], {80, 90})
        self.assertEqual(len(problems), 1)
        self.assertIn('sm_90 binning_kernel<u32, -> (256 x 16): occupancy 37.5%', problems[0])
        # Only u32 keys-only counts, and only on sm_80 and sm_90.
        rows = [row(80), row(90), row(90, values='u32', regs=80), row(75, regs=96),
                row(100, regs=96)]
        self.assertEqual(census.check(rows, {75, 80, 90, 100}), [])

    def test_ptx(self):
        ptx = census.PTX
        rows = [row(80, regs=62, shared=18440, isa=ptx, mnemonics={'match.any.sync.b32': 16}),
                row(90, shared=18440, isa=ptx, mnemonics={'add.s32': 3}),
                row(90, 'histogram', isa=ptx, mnemonics={'match.any.sync.b32': 1}),
                row(90, values='u32', isa=ptx, local=36, stack=40, mnemonics={'ret': 1})]
        self.assertEqual(census.check(rows, {80, 90}), [
            'sm_80 binning_kernel<u32, -> (256 x 16): 16 match instruction(s) in its PTX',
            'sm_90 binning_kernel<u32, u32> (256 x 16): 36 bytes of spill stores, 40 of stack '
            'frame (register spills)'])
        # SASS class names mean nothing in PTX: MATCH is an opcode no PTX has.
        self.assertEqual(census.check([row(80, shared=18440, isa=ptx, mnemonics={'MATCH': 1}),
                                       row(90, shared=18440, isa=ptx)], {80, 90}), [])
        rows = [row(80, regs=72, shared=18440, isa=ptx), row(90, shared=18440, isa=ptx)]
        self.assertIn('occupancy 37.5%', census.check(rows, {80, 90})[0])

    def test_missing_kernel_or_sass(self):
        self.assertEqual(census.check([row(80)], {80, 90}),
                         ['sm_90: no binning_kernel for u32 keys without values'])
        self.assertEqual(census.check([row(75, regs=255)], {75}), [])
        problems = census.check([row(90, mnemonics={})], {90})
        self.assertEqual(problems, ['sm_90 binning_kernel<u32, -> (256 x 16): no SASS read for it'])


class Archive(unittest.TestCase):
    def test_not_thin(self):
        with tempfile.NamedTemporaryFile(suffix='.a') as f:
            f.write(b'!<arch>\n')
            f.flush()
            self.assertEqual(census.archive_members(f.name), [f.name])

    def test_thin_by_hand(self):
        def header(name, size):
            return f'{name:<16}{0:<12}{0:<6}{0:<6}{644:<8}{size:<10}`\n'.encode()
        long_names = b'dir/long_name.o/\n'
        data = (b'!<thin>\n' + header('/', 5) + b'\0\0\0\0\0\n'
                + header('//', len(long_names)) + long_names + b'\n'
                + header('/0', 100) + header('b.o/', 7))
        self.assertEqual(census.thin_member_names(data), ['dir/long_name.o', 'b.o'])

    @needs('ar')
    def test_thin(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.mkdir(os.path.join(tmp, 'lib.a.p'))
            names = ['lib.a.p/a_long_object_name_for_the_long_name_table.o', 'lib.a.p/b.o']
            for name in names:
                with open(os.path.join(tmp, name), 'wb') as f:
                    f.write(b'\0' * 3)
            subprocess.run(['ar', 'rcsT', 'lib.a'] + names, cwd=tmp, check=True)
            self.assertEqual(census.archive_members(os.path.join(tmp, 'lib.a')),
                             [os.path.join(tmp, name) for name in names])


FAKE_CUOBJDUMP = '''#!/bin/sh
case "$1" in
-res-usage) cat "{0}/res-usage.txt" ;;
-sass) cat "{0}/sass.txt" ;;
-elf) cat "{0}/elf.txt" ;;
*) exit 2 ;;
esac
'''


@needs('c++filt')
class CommandLine(unittest.TestCase):
    """The script end to end, with a cuobjdump that prints the samples."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.cuobjdump = os.path.join(self.tmp.name, 'cuobjdump')
        with open(self.cuobjdump, 'w') as f:
            f.write(FAKE_CUOBJDUMP.format(SAMPLES))
        os.chmod(self.cuobjdump, stat.S_IRWXU)
        self.lib = os.path.join(self.tmp.name, 'libsortd-cuda.a')
        with open(self.lib, 'wb') as f:
            f.write(b'!<arch>\n')

    def tearDown(self):
        self.tmp.cleanup()

    def run_census(self, *options):
        return subprocess.run([sys.executable, SCRIPT, '--cuobjdump', self.cuobjdump, *options,
                               self.lib], capture_output=True, text=True)

    def test_check_names_the_match(self):
        proc = self.run_census('--check')
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn('kernel-census: sm_90 binning_kernel<u32, -> (256 x 16): 2 MATCH',
                      proc.stderr)
        self.assertNotIn('histogram', proc.stderr)
        self.assertNotIn('occupancy', proc.stderr)

    def test_table(self):
        proc = self.run_census()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.splitlines()
        self.assertEqual(len(lines), 7)
        self.assertTrue(lines[0].startswith('arch'))
        self.assertEqual(lines[4].split()[:11],
                         ['sm_90', 'binning', 'u32', '-', '256', 'x', '16', '64', '19464', '0/0',
                          '4'])

    def test_json(self):
        doc = json.loads(self.run_census('--json').stdout)
        self.assertEqual(doc['archs'], [80, 90])
        first = doc['kernels'][0]
        self.assertEqual((first['arch'], first['kernel'], first['values']), (80, 'binning', '-'))
        self.assertEqual(first['block_threads_from'], 'launch_bounds')
        self.assertEqual(first['occupancy']['percent'], 50.0)
        self.assertEqual(first['instructions']['MATCH'], 1)
        pairs = doc['kernels'][1]
        self.assertEqual((pairs['values'], pairs['block_threads_from']), ('u32', 'policy'))
        self.assertEqual(len(doc['problems']), 4)

    def test_markdown(self):
        lines = self.run_census('--markdown').stdout.splitlines()
        self.assertTrue(lines[0].startswith('| arch | kernel |'))
        self.assertTrue(lines[1].startswith('| --- |'))
        self.assertEqual(len(lines), 8)

    def test_no_cuobjdump(self):
        missing = os.path.join(self.tmp.name, 'none')
        proc = subprocess.run([sys.executable, SCRIPT, '--cuobjdump', missing, self.lib],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2)
        proc = subprocess.run([sys.executable, SCRIPT, '--cuobjdump', missing,
                               '--skip-if-missing', '--check', self.lib],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, census.EXIT_SKIP)


# An nvcc that prints the sample's ptxas -v run for the arch asked and leaves the PTX sample,
# retargeted to it, in -keep-dir, as nvcc -cubin -keep does.
FAKE_NVCC = '''#!{python}
import os, re, sys
args = sys.argv[1:]
arch = re.search(r'code=sm_(\\d+)', ' '.join(args)).group(1)
keep = args[args.index('-keep-dir') + 1]
runs = open('{samples}/ptxas-v.txt').read().split('ptxas info    : 0 bytes gmem\\n')
sys.stderr.write(next(run for run in runs if "for 'sm_%s'" % arch in run))
ptx = open('{samples}/cuda_engine.ptx').read().replace('.target sm_90', '.target sm_' + arch)
open(os.path.join(keep, 'cuda_engine.ptx'), 'w').write(ptx)
'''


@needs('c++filt')
class Compile(unittest.TestCase):
    """--compile end to end, with an nvcc that prints the samples."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.nvcc = os.path.join(self.tmp.name, 'nvcc')
        with open(self.nvcc, 'w') as f:
            f.write(FAKE_NVCC.format(python=sys.executable, samples=SAMPLES))
        os.chmod(self.nvcc, stat.S_IRWXU)

    def tearDown(self):
        self.tmp.cleanup()

    def run_census(self, *options, nvcc=None):
        return subprocess.run([sys.executable, SCRIPT, '--compile', 'cuda_engine.cu',
                               '--nvcc', nvcc or self.nvcc, '-I', 'kernels', *options],
                              capture_output=True, text=True)

    def test_check_names_the_match(self):
        proc = self.run_census('--arch', '80', '--arch', '90', '--check')
        self.assertEqual(proc.returncode, 1, proc.stderr)
        # The PTX sample has the binning kernel for u32 keys only: sm_80's scan and histogram
        # have ptxas figures but no PTX.
        self.assertEqual(proc.stderr.splitlines(), [
            'kernel-census: sm_80 binning_kernel<u32, -> (256 x 16): 8 match instruction(s) in '
            'its PTX',
            'kernel-census: sm_80 binning_kernel<u32, u32> (256 x 16): no PTX read for it',
            'kernel-census: sm_80 histogram_kernel<u32> (256 x 16): no PTX read for it',
            'kernel-census: sm_90 binning_kernel<u32, -> (256 x 16): 8 match instruction(s) in '
            'its PTX',
            'kernel-census: sm_90 binning_kernel<u32, u32> (256 x 16): no PTX read for it',
            'kernel-census: sm_90 histogram_kernel<u32> (256 x 16): no PTX read for it'])

    def test_table(self):
        proc = self.run_census('--arch', '90')
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.splitlines()
        self.assertTrue(lines[0].startswith('PTX census'))
        self.assertIn('spill/stack', lines[1])
        self.assertIn('atom.global/red', lines[1])
        self.assertEqual(len(lines), 5)  # title, headings, 3 of our kernels on sm_90
        self.assertEqual(lines[2].split()[:12],
                         ['sm_90', 'binning', 'u32', '-', '256', 'x', '16', '64', '18440', '0/0',
                          '4', '50%'])

    def test_json(self):
        doc = json.loads(self.run_census('--json').stdout)  # sm_80 and sm_90 by default
        self.assertEqual((doc['census'], doc['source'], doc['archs']),
                         ('PTX', 'cuda_engine.cu', [80, 90]))
        first = doc['kernels'][0]
        self.assertEqual((first['arch'], first['block_threads_from']), (80, 'launch_bounds'))
        self.assertEqual(first['instructions']['match'], 8)
        self.assertEqual(first['occupancy']['percent'], 50.0)

    def test_markdown(self):
        lines = self.run_census('--markdown', '--arch', '80').stdout.splitlines()
        self.assertTrue(lines[0].startswith('PTX census'))
        self.assertTrue(lines[2].startswith('| arch | kernel |'))

    def test_no_nvcc(self):
        missing = os.path.join(self.tmp.name, 'none')
        self.assertEqual(self.run_census(nvcc=missing).returncode, 2)
        proc = self.run_census('--skip-if-missing', nvcc=missing)
        self.assertEqual(proc.returncode, census.EXIT_SKIP)
        self.assertIn('no nvcc', proc.stderr)

    def test_nvcc_fails(self):
        proc = self.run_census(nvcc='false')
        self.assertEqual(proc.returncode, 2)
        self.assertIn('failed', proc.stderr)

    def test_usage(self):
        for argv in (['lib.a', '--compile', 'x.cu'], [], ['--arch', '80', 'lib.a']):
            proc = subprocess.run([sys.executable, SCRIPT, *argv], capture_output=True)
            self.assertEqual(proc.returncode, 2, argv)


if __name__ == '__main__':
    unittest.main()
