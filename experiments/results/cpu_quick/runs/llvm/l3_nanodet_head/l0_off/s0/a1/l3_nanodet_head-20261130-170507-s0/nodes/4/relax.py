# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(p3: R.Tensor((1, 96, 40, 40), dtype="float32"), p4: R.Tensor((1, 96, 20, 20), dtype="float32"), p5: R.Tensor((1, 96, 10, 10), dtype="float32"), p6: R.Tensor((1, 96, 5, 5), dtype="float32"), c0: R.Tensor((96, 1, 5, 5), dtype="float32"), c1: R.Tensor((96,), dtype="float32"), c2: R.Tensor((96,), dtype="float32"), c3: R.Tensor((96,), dtype="float32"), c4: R.Tensor((96,), dtype="float32"), c5: R.Tensor((96, 96, 1, 1), dtype="float32"), c6: R.Tensor((96,), dtype="float32"), c7: R.Tensor((96,), dtype="float32"), c8: R.Tensor((96,), dtype="float32"), c9: R.Tensor((96,), dtype="float32"), c10: R.Tensor((96, 1, 5, 5), dtype="float32"), c11: R.Tensor((96,), dtype="float32"), c12: R.Tensor((96,), dtype="float32"), c13: R.Tensor((96,), dtype="float32"), c14: R.Tensor((96,), dtype="float32"), c15: R.Tensor((96, 96, 1, 1), dtype="float32"), c16: R.Tensor((96,), dtype="float32"), c17: R.Tensor((96,), dtype="float32"), c18: R.Tensor((96,), dtype="float32"), c19: R.Tensor((96,), dtype="float32"), c20: R.Tensor((112, 96, 1, 1), dtype="float32"), c21: R.Tensor((112,), dtype="float32"), c22: R.Tensor((8,), dtype="float32"), c23: R.Tensor((96, 1, 5, 5), dtype="float32"), c24: R.Tensor((96,), dtype="float32"), c25: R.Tensor((96,), dtype="float32"), c26: R.Tensor((96,), dtype="float32"), c27: R.Tensor((96,), dtype="float32"), c28: R.Tensor((96, 96, 1, 1), dtype="float32"), c29: R.Tensor((96,), dtype="float32"), c30: R.Tensor((96,), dtype="float32"), c31: R.Tensor((96,), dtype="float32"), c32: R.Tensor((96,), dtype="float32"), c33: R.Tensor((96, 1, 5, 5), dtype="float32"), c34: R.Tensor((96,), dtype="float32"), c35: R.Tensor((96,), dtype="float32"), c36: R.Tensor((96,), dtype="float32"), c37: R.Tensor((96,), dtype="float32"), c38: R.Tensor((96, 96, 1, 1), dtype="float32"), c39: R.Tensor((96,), dtype="float32"), c40: R.Tensor((96,), dtype="float32"), c41: R.Tensor((96,), dtype="float32"), c42: R.Tensor((96,), dtype="float32"), c43: R.Tensor((112, 96, 1, 1), dtype="float32"), c44: R.Tensor((112,), dtype="float32"), c45: R.Tensor((8,), dtype="float32"), c46: R.Tensor((96, 1, 5, 5), dtype="float32"), c47: R.Tensor((96,), dtype="float32"), c48: R.Tensor((96,), dtype="float32"), c49: R.Tensor((96,), dtype="float32"), c50: R.Tensor((96,), dtype="float32"), c51: R.Tensor((96, 96, 1, 1), dtype="float32"), c52: R.Tensor((96,), dtype="float32"), c53: R.Tensor((96,), dtype="float32"), c54: R.Tensor((96,), dtype="float32"), c55: R.Tensor((96,), dtype="float32"), c56: R.Tensor((96, 1, 5, 5), dtype="float32"), c57: R.Tensor((96,), dtype="float32"), c58: R.Tensor((96,), dtype="float32"), c59: R.Tensor((96,), dtype="float32"), c60: R.Tensor((96,), dtype="float32"), c61: R.Tensor((96, 96, 1, 1), dtype="float32"), c62: R.Tensor((96,), dtype="float32"), c63: R.Tensor((96,), dtype="float32"), c64: R.Tensor((96,), dtype="float32"), c65: R.Tensor((96,), dtype="float32"), c66: R.Tensor((112, 96, 1, 1), dtype="float32"), c67: R.Tensor((112,), dtype="float32"), c68: R.Tensor((8,), dtype="float32"), c69: R.Tensor((96, 1, 5, 5), dtype="float32"), c70: R.Tensor((96,), dtype="float32"), c71: R.Tensor((96,), dtype="float32"), c72: R.Tensor((96,), dtype="float32"), c73: R.Tensor((96,), dtype="float32"), c74: R.Tensor((96, 96, 1, 1), dtype="float32"), c75: R.Tensor((96,), dtype="float32"), c76: R.Tensor((96,), dtype="float32"), c77: R.Tensor((96,), dtype="float32"), c78: R.Tensor((96,), dtype="float32"), c79: R.Tensor((96, 1, 5, 5), dtype="float32"), c80: R.Tensor((96,), dtype="float32"), c81: R.Tensor((96,), dtype="float32"), c82: R.Tensor((96,), dtype="float32"), c83: R.Tensor((96,), dtype="float32"), c84: R.Tensor((96, 96, 1, 1), dtype="float32"), c85: R.Tensor((96,), dtype="float32"), c86: R.Tensor((96,), dtype="float32"), c87: R.Tensor((96,), dtype="float32"), c88: R.Tensor((96,), dtype="float32"), c89: R.Tensor((112, 96, 1, 1), dtype="float32"), c90: R.Tensor((112,), dtype="float32"), c91: R.Tensor((8,), dtype="float32")) -> R.Tuple(R.Tensor((1, 2125, 84), dtype="float32")):
        with R.dataflow():
            lv: R.Tensor((1, 96, 40, 40), dtype="float32") = R.nn.conv2d(p3, c0, strides=[1, 1], padding=[2, 2, 2, 2], dilation=[1, 1], groups=96, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv1: R.Tuple(R.Tensor((1, 96, 40, 40), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv, c1, c2, c3, c4, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv2: R.Tensor((1, 96, 40, 40), dtype="float32") = lv1[0]
            lv3: R.Tensor((1, 96, 40, 40), dtype="float32") = R.nn.leakyrelu(lv2, alpha=0.10000000000000001)
            lv4: R.Tensor((1, 96, 40, 40), dtype="float32") = R.nn.conv2d(lv3, c5, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv5: R.Tuple(R.Tensor((1, 96, 40, 40), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv4, c6, c7, c8, c9, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv6: R.Tensor((1, 96, 40, 40), dtype="float32") = lv5[0]
            lv7: R.Tensor((1, 96, 40, 40), dtype="float32") = R.nn.leakyrelu(lv6, alpha=0.10000000000000001)
            lv8: R.Tensor((1, 96, 40, 40), dtype="float32") = R.nn.conv2d(lv7, c10, strides=[1, 1], padding=[2, 2, 2, 2], dilation=[1, 1], groups=96, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv9: R.Tuple(R.Tensor((1, 96, 40, 40), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv8, c11, c12, c13, c14, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv10: R.Tensor((1, 96, 40, 40), dtype="float32") = lv9[0]
            lv11: R.Tensor((1, 96, 40, 40), dtype="float32") = R.nn.leakyrelu(lv10, alpha=0.10000000000000001)
            lv12: R.Tensor((1, 96, 40, 40), dtype="float32") = R.nn.conv2d(lv11, c15, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv13: R.Tuple(R.Tensor((1, 96, 40, 40), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv12, c16, c17, c18, c19, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv14: R.Tensor((1, 96, 40, 40), dtype="float32") = lv13[0]
            lv15: R.Tensor((1, 96, 40, 40), dtype="float32") = R.nn.leakyrelu(lv14, alpha=0.10000000000000001)
            lv16: R.Tensor((1, 112, 40, 40), dtype="float32") = R.nn.conv2d(lv15, c20, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv17: R.Tensor((1, 112, 1, 1), dtype="float32") = R.reshape(c21, R.shape([1, 112, 1, 1]))
            lv18: R.Tensor((1, 112, 40, 40), dtype="float32") = R.add(lv16, lv17)
            lv19: R.Tensor((1, 112, 1600), dtype="float32") = R.reshape(lv18, R.shape([1, 112, 1600]))
            lv20: R.Tensor((1, 1600, 112), dtype="float32") = R.permute_dims(lv19, axes=[0, 2, 1])
            lv21: R.Tuple(R.Tensor((1, 1600, 80), dtype="float32"), R.Tensor((1, 1600, 32), dtype="float32")) = R.split(lv20, indices_or_sections=[80], axis=-1)
            lv22: R.Tensor((1, 1600, 80), dtype="float32") = lv21[0]
            lv23: R.Tensor((1, 1600, 32), dtype="float32") = lv21[1]
            lv24: R.Tensor((1, 1600, 4, 8), dtype="float32") = R.reshape(lv23, R.shape([1, 1600, 4, 8]))
            lv25: R.Tensor((1, 1600, 4, 8), dtype="float32") = R.nn.softmax(lv24, axis=-1)
            lv26: R.Tensor((1, 1600, 4, 8), dtype="float32") = R.multiply(lv25, c22)
            lv27: R.Tensor((1, 1600, 4), dtype="float32") = R.sum(lv26, axis=[-1], keepdims=False)
            lv28: R.Tensor((1, 1600, 80), dtype="float32") = R.sigmoid(lv22)
            lv29: R.Tensor((1, 1600, 84), dtype="float32") = R.concat((lv28, lv27), axis=-1)
            lv30: R.Tensor((1, 96, 20, 20), dtype="float32") = R.nn.conv2d(p4, c23, strides=[1, 1], padding=[2, 2, 2, 2], dilation=[1, 1], groups=96, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv31: R.Tuple(R.Tensor((1, 96, 20, 20), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv30, c24, c25, c26, c27, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv32: R.Tensor((1, 96, 20, 20), dtype="float32") = lv31[0]
            lv33: R.Tensor((1, 96, 20, 20), dtype="float32") = R.nn.leakyrelu(lv32, alpha=0.10000000000000001)
            lv34: R.Tensor((1, 96, 20, 20), dtype="float32") = R.nn.conv2d(lv33, c28, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv35: R.Tuple(R.Tensor((1, 96, 20, 20), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv34, c29, c30, c31, c32, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv36: R.Tensor((1, 96, 20, 20), dtype="float32") = lv35[0]
            lv37: R.Tensor((1, 96, 20, 20), dtype="float32") = R.nn.leakyrelu(lv36, alpha=0.10000000000000001)
            lv38: R.Tensor((1, 96, 20, 20), dtype="float32") = R.nn.conv2d(lv37, c33, strides=[1, 1], padding=[2, 2, 2, 2], dilation=[1, 1], groups=96, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv39: R.Tuple(R.Tensor((1, 96, 20, 20), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv38, c34, c35, c36, c37, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv40: R.Tensor((1, 96, 20, 20), dtype="float32") = lv39[0]
            lv41: R.Tensor((1, 96, 20, 20), dtype="float32") = R.nn.leakyrelu(lv40, alpha=0.10000000000000001)
            lv42: R.Tensor((1, 96, 20, 20), dtype="float32") = R.nn.conv2d(lv41, c38, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv43: R.Tuple(R.Tensor((1, 96, 20, 20), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv42, c39, c40, c41, c42, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv44: R.Tensor((1, 96, 20, 20), dtype="float32") = lv43[0]
            lv45: R.Tensor((1, 96, 20, 20), dtype="float32") = R.nn.leakyrelu(lv44, alpha=0.10000000000000001)
            lv46: R.Tensor((1, 112, 20, 20), dtype="float32") = R.nn.conv2d(lv45, c43, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv47: R.Tensor((1, 112, 1, 1), dtype="float32") = R.reshape(c44, R.shape([1, 112, 1, 1]))
            lv48: R.Tensor((1, 112, 20, 20), dtype="float32") = R.add(lv46, lv47)
            lv49: R.Tensor((1, 112, 400), dtype="float32") = R.reshape(lv48, R.shape([1, 112, 400]))
            lv50: R.Tensor((1, 400, 112), dtype="float32") = R.permute_dims(lv49, axes=[0, 2, 1])
            lv51: R.Tuple(R.Tensor((1, 400, 80), dtype="float32"), R.Tensor((1, 400, 32), dtype="float32")) = R.split(lv50, indices_or_sections=[80], axis=-1)
            lv52: R.Tensor((1, 400, 80), dtype="float32") = lv51[0]
            lv53: R.Tensor((1, 400, 32), dtype="float32") = lv51[1]
            lv54: R.Tensor((1, 400, 4, 8), dtype="float32") = R.reshape(lv53, R.shape([1, 400, 4, 8]))
            lv55: R.Tensor((1, 400, 4, 8), dtype="float32") = R.nn.softmax(lv54, axis=-1)
            lv56: R.Tensor((1, 400, 4, 8), dtype="float32") = R.multiply(lv55, c45)
            lv57: R.Tensor((1, 400, 4), dtype="float32") = R.sum(lv56, axis=[-1], keepdims=False)
            lv58: R.Tensor((1, 400, 80), dtype="float32") = R.sigmoid(lv52)
            lv59: R.Tensor((1, 400, 84), dtype="float32") = R.concat((lv58, lv57), axis=-1)
            lv60: R.Tensor((1, 96, 10, 10), dtype="float32") = R.nn.conv2d(p5, c46, strides=[1, 1], padding=[2, 2, 2, 2], dilation=[1, 1], groups=96, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv61: R.Tuple(R.Tensor((1, 96, 10, 10), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv60, c47, c48, c49, c50, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv62: R.Tensor((1, 96, 10, 10), dtype="float32") = lv61[0]
            lv63: R.Tensor((1, 96, 10, 10), dtype="float32") = R.nn.leakyrelu(lv62, alpha=0.10000000000000001)
            lv64: R.Tensor((1, 96, 10, 10), dtype="float32") = R.nn.conv2d(lv63, c51, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv65: R.Tuple(R.Tensor((1, 96, 10, 10), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv64, c52, c53, c54, c55, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv66: R.Tensor((1, 96, 10, 10), dtype="float32") = lv65[0]
            lv67: R.Tensor((1, 96, 10, 10), dtype="float32") = R.nn.leakyrelu(lv66, alpha=0.10000000000000001)
            lv68: R.Tensor((1, 96, 10, 10), dtype="float32") = R.nn.conv2d(lv67, c56, strides=[1, 1], padding=[2, 2, 2, 2], dilation=[1, 1], groups=96, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv69: R.Tuple(R.Tensor((1, 96, 10, 10), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv68, c57, c58, c59, c60, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv70: R.Tensor((1, 96, 10, 10), dtype="float32") = lv69[0]
            lv71: R.Tensor((1, 96, 10, 10), dtype="float32") = R.nn.leakyrelu(lv70, alpha=0.10000000000000001)
            lv72: R.Tensor((1, 96, 10, 10), dtype="float32") = R.nn.conv2d(lv71, c61, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv73: R.Tuple(R.Tensor((1, 96, 10, 10), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv72, c62, c63, c64, c65, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv74: R.Tensor((1, 96, 10, 10), dtype="float32") = lv73[0]
            lv75: R.Tensor((1, 96, 10, 10), dtype="float32") = R.nn.leakyrelu(lv74, alpha=0.10000000000000001)
            lv76: R.Tensor((1, 112, 10, 10), dtype="float32") = R.nn.conv2d(lv75, c66, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv77: R.Tensor((1, 112, 1, 1), dtype="float32") = R.reshape(c67, R.shape([1, 112, 1, 1]))
            lv78: R.Tensor((1, 112, 10, 10), dtype="float32") = R.add(lv76, lv77)
            lv79: R.Tensor((1, 112, 100), dtype="float32") = R.reshape(lv78, R.shape([1, 112, 100]))
            lv80: R.Tensor((1, 100, 112), dtype="float32") = R.permute_dims(lv79, axes=[0, 2, 1])
            lv81: R.Tuple(R.Tensor((1, 100, 80), dtype="float32"), R.Tensor((1, 100, 32), dtype="float32")) = R.split(lv80, indices_or_sections=[80], axis=-1)
            lv82: R.Tensor((1, 100, 80), dtype="float32") = lv81[0]
            lv83: R.Tensor((1, 100, 32), dtype="float32") = lv81[1]
            lv84: R.Tensor((1, 100, 4, 8), dtype="float32") = R.reshape(lv83, R.shape([1, 100, 4, 8]))
            lv85: R.Tensor((1, 100, 4, 8), dtype="float32") = R.nn.softmax(lv84, axis=-1)
            lv86: R.Tensor((1, 100, 4, 8), dtype="float32") = R.multiply(lv85, c68)
            lv87: R.Tensor((1, 100, 4), dtype="float32") = R.sum(lv86, axis=[-1], keepdims=False)
            lv88: R.Tensor((1, 100, 80), dtype="float32") = R.sigmoid(lv82)
            lv89: R.Tensor((1, 100, 84), dtype="float32") = R.concat((lv88, lv87), axis=-1)
            lv90: R.Tensor((1, 96, 5, 5), dtype="float32") = R.nn.conv2d(p6, c69, strides=[1, 1], padding=[2, 2, 2, 2], dilation=[1, 1], groups=96, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv91: R.Tuple(R.Tensor((1, 96, 5, 5), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv90, c70, c71, c72, c73, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv92: R.Tensor((1, 96, 5, 5), dtype="float32") = lv91[0]
            lv93: R.Tensor((1, 96, 5, 5), dtype="float32") = R.nn.leakyrelu(lv92, alpha=0.10000000000000001)
            lv94: R.Tensor((1, 96, 5, 5), dtype="float32") = R.nn.conv2d(lv93, c74, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv95: R.Tuple(R.Tensor((1, 96, 5, 5), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv94, c75, c76, c77, c78, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv96: R.Tensor((1, 96, 5, 5), dtype="float32") = lv95[0]
            lv97: R.Tensor((1, 96, 5, 5), dtype="float32") = R.nn.leakyrelu(lv96, alpha=0.10000000000000001)
            lv98: R.Tensor((1, 96, 5, 5), dtype="float32") = R.nn.conv2d(lv97, c79, strides=[1, 1], padding=[2, 2, 2, 2], dilation=[1, 1], groups=96, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv99: R.Tuple(R.Tensor((1, 96, 5, 5), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv98, c80, c81, c82, c83, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv100: R.Tensor((1, 96, 5, 5), dtype="float32") = lv99[0]
            lv101: R.Tensor((1, 96, 5, 5), dtype="float32") = R.nn.leakyrelu(lv100, alpha=0.10000000000000001)
            lv102: R.Tensor((1, 96, 5, 5), dtype="float32") = R.nn.conv2d(lv101, c84, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv103: R.Tuple(R.Tensor((1, 96, 5, 5), dtype="float32"), R.Tensor((96,), dtype="float32"), R.Tensor((96,), dtype="float32")) = R.nn.batch_norm(lv102, c85, c86, c87, c88, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv104: R.Tensor((1, 96, 5, 5), dtype="float32") = lv103[0]
            lv105: R.Tensor((1, 96, 5, 5), dtype="float32") = R.nn.leakyrelu(lv104, alpha=0.10000000000000001)
            lv106: R.Tensor((1, 112, 5, 5), dtype="float32") = R.nn.conv2d(lv105, c89, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv107: R.Tensor((1, 112, 1, 1), dtype="float32") = R.reshape(c90, R.shape([1, 112, 1, 1]))
            lv108: R.Tensor((1, 112, 5, 5), dtype="float32") = R.add(lv106, lv107)
            lv109: R.Tensor((1, 112, 25), dtype="float32") = R.reshape(lv108, R.shape([1, 112, 25]))
            lv110: R.Tensor((1, 25, 112), dtype="float32") = R.permute_dims(lv109, axes=[0, 2, 1])
            lv111: R.Tuple(R.Tensor((1, 25, 80), dtype="float32"), R.Tensor((1, 25, 32), dtype="float32")) = R.split(lv110, indices_or_sections=[80], axis=-1)
            lv112: R.Tensor((1, 25, 80), dtype="float32") = lv111[0]
            lv113: R.Tensor((1, 25, 32), dtype="float32") = lv111[1]
            lv114: R.Tensor((1, 25, 4, 8), dtype="float32") = R.reshape(lv113, R.shape([1, 25, 4, 8]))
            lv115: R.Tensor((1, 25, 4, 8), dtype="float32") = R.nn.softmax(lv114, axis=-1)
            lv116: R.Tensor((1, 25, 4, 8), dtype="float32") = R.multiply(lv115, c91)
            lv117: R.Tensor((1, 25, 4), dtype="float32") = R.sum(lv116, axis=[-1], keepdims=False)
            lv118: R.Tensor((1, 25, 80), dtype="float32") = R.sigmoid(lv112)
            lv119: R.Tensor((1, 25, 84), dtype="float32") = R.concat((lv118, lv117), axis=-1)
            lv120: R.Tensor((1, 2125, 84), dtype="float32") = R.concat((lv29, lv59, lv89, lv119), axis=1)
            gv: R.Tuple(R.Tensor((1, 2125, 84), dtype="float32")) = (lv120,)
            R.output(gv)
        return gv